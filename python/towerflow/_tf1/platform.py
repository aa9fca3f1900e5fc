"""tf.app, tf.flags, tf.logging and tf.gfile of TF1's Python API: the plumbing
TF1 scripts open with (command-line flags, a main, log lines, file access),
over Python's own argparse-free parsing, logging, os and glob."""

import glob as _glob
import logging as _logging
import os
import shutil
import sys

# ---- flags (tf.app.flags, tf.flags) -------------------------------------------


class _Flag:
    def __init__(self, name, default, help_text, parse):
        self.name, self.default, self.help, self.parse = name, default, help_text, parse
        self.value = default


def _parse_bool(text):
    lowered = str(text).lower()
    if lowered in ("true", "t", "1", "yes"):
        return True
    if lowered in ("false", "f", "0", "no"):
        return False
    raise ValueError("not a boolean: %r" % (text,))


class _FlagValues:
    """FLAGS: each defined flag an attribute; the command line (sys.argv, or
    tf.app.run's argv) is parsed at the first read of a flag, as TF1's flags
    did, or by tf.app.run. Unknown arguments are left to the program."""

    def __init__(self):
        self.__dict__["_flags"] = {}
        self.__dict__["_parsed"] = False

    def _define(self, name, default, help_text, parse):
        if name in self._flags:
            raise ValueError("flag --%s is defined twice" % name)
        self._flags[name] = _Flag(name, default, help_text, parse)

    def _parse(self, argv):
        """Sets the flags named in argv[1:]; returns argv without them."""
        rest = [argv[0]] if argv else []
        args = list(argv[1:])
        i = 0
        while i < len(args):
            arg = args[i]
            i += 1
            if arg == "--":
                rest.extend(args[i:])
                break
            if not arg.startswith("-") or arg == "-":
                rest.append(arg)
                continue
            body = arg.lstrip("-")
            name, has_value, value = body.partition("=")
            flag = self._flags.get(name)
            if flag is None and name.startswith("no") and name[2:] in self._flags \
                    and self._flags[name[2:]].parse is _parse_bool and not has_value:
                self._flags[name[2:]].value = False
                continue
            if flag is None:
                rest.append(arg)
                continue
            if not has_value:
                if flag.parse is _parse_bool:
                    flag.value = True
                    continue
                if i >= len(args):
                    raise ValueError("flag --%s needs a value" % name)
                value = args[i]
                i += 1
            try:
                flag.value = flag.parse(value)
            except ValueError as e:
                raise ValueError("flag --%s: %s" % (name, e)) from None
        self.__dict__["_parsed"] = True
        return rest

    def __call__(self, argv):
        return self._parse(argv)

    def __getattr__(self, name):
        flags = self.__dict__["_flags"]
        if name not in flags:
            raise AttributeError("no flag --%s is defined" % name)
        if not self.__dict__["_parsed"]:
            self._parse(sys.argv)
        return flags[name].value

    def __setattr__(self, name, value):
        if name not in self._flags:
            raise AttributeError("no flag --%s is defined" % name)
        self._flags[name].value = value

    def __contains__(self, name):
        return name in self._flags

    def flag_values_dict(self):
        return {name: getattr(self, name) for name in self._flags}


FLAGS = _FlagValues()


def DEFINE_string(name, default, help=None, flag_values=FLAGS):  # noqa: A002,N802
    flag_values._define(name, default, help, str)


def DEFINE_integer(name, default, help=None, flag_values=FLAGS, lower_bound=None, upper_bound=None):  # noqa: A002,N802
    def parse(text):
        v = int(text)
        if (lower_bound is not None and v < lower_bound) or (upper_bound is not None and v > upper_bound):
            raise ValueError("%d is outside [%s, %s]" % (v, lower_bound, upper_bound))
        return v
    flag_values._define(name, default, help, parse)


def DEFINE_float(name, default, help=None, flag_values=FLAGS):  # noqa: A002,N802
    flag_values._define(name, default, help, float)


def DEFINE_boolean(name, default, help=None, flag_values=FLAGS):  # noqa: A002,N802
    flag_values._define(name, default, help, _parse_bool)


DEFINE_bool = DEFINE_boolean  # noqa: N816


def DEFINE_list(name, default, help=None, flag_values=FLAGS):  # noqa: A002,N802
    flag_values._define(name, default if default is None or isinstance(default, list) else str(default).split(","),
                        help, lambda text: [s for s in str(text).split(",") if s])


def run(main=None, argv=None):
    """tf.app.run: parses the flags out of argv (sys.argv by default), calls
    main(the rest) (__main__'s main if None) and exits with what it returns."""
    args = FLAGS._parse(sys.argv if argv is None else argv)
    if main is None:
        main = sys.modules["__main__"].main
    sys.exit(main(args))


# ---- tf.logging ---------------------------------------------------------------

DEBUG, INFO, WARN, ERROR, FATAL = _logging.DEBUG, _logging.INFO, _logging.WARNING, _logging.ERROR, _logging.FATAL
_logger = _logging.getLogger("tensorflow")
if not _logger.handlers:
    _handler = _logging.StreamHandler()
    _handler.setFormatter(_logging.Formatter("%(levelname)s:%(name)s:%(message)s"))
    _logger.addHandler(_handler)
    _logger.setLevel(WARN)
    _logger.propagate = False


def set_verbosity(level):
    _logger.setLevel(level)


def get_verbosity():
    return _logger.getEffectiveLevel()


def debug(msg, *args, **kwargs):
    _logger.debug(msg, *args, **kwargs)


def info(msg, *args, **kwargs):
    _logger.info(msg, *args, **kwargs)


def warning(msg, *args, **kwargs):
    _logger.warning(msg, *args, **kwargs)


warn = warning


def error(msg, *args, **kwargs):
    _logger.error(msg, *args, **kwargs)


def fatal(msg, *args, **kwargs):
    _logger.fatal(msg, *args, **kwargs)


_counts = {}


def log_every_n(level, msg, n, *args):
    key = (level, msg)
    count = _counts.get(key, 0)
    _counts[key] = count + 1
    if count % n == 0:
        _logger.log(level, msg, *args)


def log_first_n(level, msg, n, *args):
    key = ("first", level, msg)
    count = _counts.get(key, 0)
    _counts[key] = count + 1
    if count < n:
        _logger.log(level, msg, *args)


# ---- tf.gfile -----------------------------------------------------------------


def GFile(name, mode="r"):  # noqa: N802
    return open(name, mode)  # noqa: SIM115: the caller closes it, as TF's GFile


Open = GFile
FastGFile = GFile


def Exists(path):  # noqa: N802
    return os.path.exists(path)


def IsDirectory(path):  # noqa: N802
    return os.path.isdir(path)


def ListDirectory(path):  # noqa: N802
    return os.listdir(path)


def Glob(pattern):  # noqa: N802
    return _glob.glob(pattern)


def MakeDirs(path):  # noqa: N802
    os.makedirs(path, exist_ok=True)


def MkDir(path):  # noqa: N802
    os.mkdir(path)


def Remove(path):  # noqa: N802
    os.remove(path)


def DeleteRecursively(path):  # noqa: N802
    shutil.rmtree(path)


def Rename(oldname, newname, overwrite=False):  # noqa: N802
    if not overwrite and os.path.exists(newname):
        raise FileExistsError("%s exists" % newname)
    os.replace(oldname, newname)


def Copy(oldpath, newpath, overwrite=False):  # noqa: N802
    if not overwrite and os.path.exists(newpath):
        raise FileExistsError("%s exists" % newpath)
    shutil.copyfile(oldpath, newpath)


def Walk(top, in_order=True):  # noqa: N802
    for root, dirs, files in os.walk(top, topdown=in_order):
        yield root, dirs, files


def Stat(path):  # noqa: N802
    st = os.stat(path)

    class _Stat:
        length = st.st_size
        mtime_nsec = st.st_mtime_ns
        is_directory = os.path.isdir(path)
    return _Stat()
