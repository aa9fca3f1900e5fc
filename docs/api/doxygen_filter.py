#!/usr/bin/env python3
"""Doxygen INPUT_FILTER for towerflow's public headers (docs/api/Doxyfile).

Why it exists: the headers follow leveldb's comment style, plain `//` comments
(a paragraph on the abstraction before the include guard, a `//` block stating
the contract above each declaration, trailing `// ...` notes on fields), which
Doxygen treats as ordinary comments. Rather than rewrite every header to `///`,
this filter rewrites the comment markers on the fly, for Doxygen's eyes only:

- the opening `//` block before the include guard becomes the file's
  documentation (`///` lines and a `\\file` command);
- a `//` block directly above a declaration (no blank line between) becomes
  `///` lines; a block followed by a blank line, an #include or another
  preprocessor line (but a #define), an access specifier or a closing brace
  stays a plain comment, and so do separators (`// ---- Readers ----`),
  comments inside function bodies and argument lists, in namespaces internal
  and detail, and above helper macros that the header #undefs;
- a trailing comment after a member, constant, enumerator or one-line inline
  function (`int x = 0;  // what x is`) becomes `///<`, as do comment lines
  aligned under it that continue it; `// NOLINT...` stays;
- in documentation text, characters Doxygen reads as commands or markup
  (backslash, @, <, >, &, #, %) are escaped, except inside `code spans` and
  "double quotes", which Doxygen prints as they are;
- an indented block after a line ending with ':' or after an empty `//` line
  (a code example, a file layout) becomes a \\code block.

The line count never changes (Doxygen's messages and links cite line numbers):
only comment markers and escapes are rewritten. Usage: doxygen_filter.py FILE
(Doxygen appends the file name); the result goes to stdout. Python 3, stdlib only.
"""

import re
import sys

COMMENT_ONLY = re.compile(r'^(\s*)//(?![/!])(.*)$')
SEPARATOR = re.compile(r'^\s*(-{2,}|={2,}|\*{3,})(\s|$)')  # // ---- Readers ----, // ---- threads
SCOPE_HEAD = re.compile(r'\b(namespace|class|struct|union|enum)\b|\bextern\s*"C"')
ACCESS = re.compile(r'^\s*(public|private|protected)\s*:')
# Namespaces whose symbols the Doxyfile excludes (EXCLUDE_SYMBOLS): comments
# on them and in them stay plain.
HIDDEN_NAMESPACE = re.compile(r'\bnamespace\s+(\w+::)*(internal|detail)\b')
LIST_ITEM = re.compile(r'^\s*([-*+]|\d+\.)\s')


def split_code(line):
    """Splits a line into (code, comment): comment is the text from the first
    `//` outside a string or character literal (None when there is none). The
    code part has its literals blanked, so that braces in them do not count."""
    code = []
    i, n = 0, len(line)
    while i < n:
        c = line[i]
        if c == '/' and i + 1 < n and line[i + 1] == '/':
            return ''.join(code), line[i:]
        if c == '/' and i + 1 < n and line[i + 1] == '*':
            end = line.find('*/', i + 2)
            if end < 0:  # a block comment running on: not used in these headers
                return ''.join(code), None
            code.append(' ' * (end + 2 - i))
            i = end + 2
            continue
        if c == '"' or (c == "'" and (i == 0 or not line[i - 1].isalnum())):
            j = i + 1
            while j < n and line[j] != c:
                j += 2 if line[j] == '\\' else 1
            code.append(c + ' ' * (min(j, n) - i - 1) + (c if j < n else ''))
            i = j + 1
            continue
        code.append(c)
        i += 1
    return ''.join(code), None


ESCAPED = set('\\@&#%<>')


def brief_end(texts):
    """Where Doxygen ends the brief description (JAVADOC_AUTOBRIEF) of a block:
    (line, column) just after the first '.' followed by a blank or the end of
    the line, outside a "quote" closed on the same line, within the first
    paragraph; (line, 0) at a blank line; None when the block is one sentence."""
    for li, t in enumerate(texts):
        if not t.strip():
            return (li, 0)
        i = 0
        while i < len(t):
            c = t[i]
            if c == '"':
                j = t.find('"', i + 1)
                if j >= 0:
                    i = j + 1
                    continue
            if c == '.' and (i + 1 == len(t) or t[i + 1] in ' \t'):
                return (li, i + 1)
            i += 1
    return None


def escape_texts(texts):
    """Escapes Doxygen's command and markup characters (backslash, @, &, #, %,
    <, >) in the documentation text of one comment block (the texts after
    `//`, one per line), where Doxygen would read them: not inside `code spans`
    (Markdown shows those verbatim) and not inside "double quotes" (Doxygen's
    tokenizer takes a quoted string, across lines, up to the next unescaped
    quote, as one literal word, escapes and all). The brief description
    (autobrief) and the rest are tokenized apart, so quotes pair within each."""
    # Positions (line, column) in reading order, split into the two parts.
    cut = brief_end(texts)
    positions = [(li, ci) for li, t in enumerate(texts) for ci in range(len(t) + 1)]
    # (column len(t) stands for the line's end: a newline)
    if cut is None:
        parts = [positions]
    else:
        k = positions.index(cut) if cut in positions else len(positions)
        parts = [positions[:k], positions[k:]]
    literal = set()  # positions inside a quote or a code span
    for part in parts:
        chars = [texts[li][ci] if ci < len(texts[li]) else '\n' for li, ci in part]
        i = 0
        span_open = None
        while i < len(chars):
            c = chars[i]
            if c == '`':
                if span_open is None:
                    span_open = i
                else:
                    literal.update(part[span_open:i + 1])
                    span_open = None
            elif c == '\n' and i + 1 < len(chars) and chars[i + 1] == '\n':
                span_open = None  # a code span ends with its paragraph
            elif c == '"' and span_open is None:
                j = i + 1
                while j < len(chars) and not (chars[j] == '"' and chars[j - 1] != '\\'):
                    j += 1
                if j < len(chars):
                    literal.update(part[i:j + 1])
                    i = j + 1
                    continue
            i += 1
    out = []
    for li, t in enumerate(texts):
        res = []
        for ci, c in enumerate(t):
            if c in ESCAPED and (li, ci) not in literal:
                res.append('\\' + c)
            else:
                res.append(c)
        out.append(''.join(res))
    return out


def indent_of(s):
    return len(s) - len(s.lstrip(' '))


def doc_block(bodies, marker):
    """Turns the texts of one comment block (what follows `//` on each line)
    into documentation lines (without their leading whitespace and marker).
    Indented runs that follow a line ending with ':' or an empty line, outside
    a list, become a \\code block: C++ when a line ends with ';', else
    \\code{.unparsed} (a file layout, a table of errors). (\\verbatim would
    show the `///` markers of its lines.)"""
    texts = list(bodies)
    base = min((indent_of(t) for t in texts if t.strip()), default=0)
    in_code = [False] * len(texts)
    opener = {}  # line index -> command appended to that line
    closer = {}
    in_list = False
    i = 0
    while i < len(texts):
        t = texts[i]
        if not t.strip():
            in_list = False
            i += 1
            continue
        rel = indent_of(t) - base
        if rel == 0:
            in_list = bool(LIST_ITEM.match(t))
            i += 1
            continue
        prev = texts[i - 1] if i > 0 else None
        starts_block = (prev is not None and not in_list and rel >= 2 and
                        (not prev.strip() or prev.rstrip().endswith(':')))
        if not starts_block:
            i += 1
            continue
        j = i
        while j < len(texts) and texts[j].strip() and indent_of(texts[j]) - base >= 2:
            j += 1
        block = texts[i:j]
        is_cpp = any(re.search(r';\s*(//.*)?$', b) for b in block)
        cmd = '\\code' if is_cpp else '\\code{.unparsed}'
        end = '\\endcode'
        opener[i - 1] = cmd
        closer[j - 1] = end
        for k in range(i, j):
            in_code[k] = True
        i = j
    # A \\code block ends the paragraph, as far as the brief is concerned.
    escaped = escape_texts(['' if in_code[k] else t for k, t in enumerate(texts)])
    out = []
    for k, t in enumerate(texts):
        s = t if in_code[k] else escaped[k]
        if k in closer:
            s = s.rstrip() + ' ' + closer[k]
        if k in opener:
            s = s.rstrip() + ' ' + opener[k]
        out.append(marker + s)
    return out


def is_api_define(line, undefined):
    m = re.match(r'\s*#\s*define\s+(\w+)', line)
    return bool(m) and m.group(1) not in undefined


def filter_lines(lines):
    n = len(lines)
    out = list(lines)
    kinds = []     # 'blank', 'comment', 'code', 'pp' (preprocessor)
    contexts = []  # per line, before it: (in a body or a hidden namespace, paren depth, top of stack)
    codes = []     # per line: (code, trailing comment or None)
    stack = []     # 'scope', 'hidden' (namespace internal), 'enum' or 'body' per open brace
    paren = 0
    head = ''      # code of the statement being read, since the last ; { }
    pp_continues = False
    for line in lines:
        text = line.rstrip('\n')
        ctx = ('body' in stack or 'hidden' in stack, paren, stack[-1] if stack else None)
        contexts.append(ctx)
        if pp_continues or text.lstrip().startswith('#'):
            kinds.append('pp')
            codes.append(split_code(text))
            pp_continues = text.rstrip().endswith('\\')
            continue
        if not text.strip():
            kinds.append('blank')
            codes.append(('', None))
            continue
        if COMMENT_ONLY.match(text):
            kinds.append('comment')
            codes.append(('', text))
            continue
        if text.lstrip().startswith('//'):  # `///` or `//!`: already Doxygen's
            kinds.append('doc')
            codes.append(('', None))
            continue
        code, comment = split_code(text)
        kinds.append('code')
        codes.append((code, comment))
        for c in code:
            if c == '(':
                paren += 1
            elif c == ')':
                paren = max(0, paren - 1)
            elif c == '{':
                if 'body' in stack or paren:
                    stack.append('body')
                elif HIDDEN_NAMESPACE.search(head):
                    stack.append('hidden')
                elif re.search(r'\benum\b', head):
                    stack.append('enum')
                elif SCOPE_HEAD.search(head) and '=' not in head:
                    stack.append('scope')
                else:
                    stack.append('body')
                head = ''
            elif c == '}':
                if stack:
                    stack.pop()
                head = ''
            elif c == ';':
                head = ''
            else:
                head += c
        head += ' '

    # The file's opening block: comment lines before the include guard.
    start = 0
    while start < n and kinds[start] == 'blank':
        start += 1
    end = start
    while end < n and kinds[end] == 'comment':
        end += 1
    after = end
    while after < n and kinds[after] == 'blank':
        after += 1
    handled = set()
    if end > start and after < n and re.match(r'\s*#\s*(ifndef|pragma\s+once)', lines[after]):
        bodies = [COMMENT_ONLY.match(lines[k].rstrip('\n')).group(2) for k in range(start, end)]
        docs = doc_block(bodies, '///')
        docs[-1] = docs[-1].rstrip() + ' \\file'
        for k, d in zip(range(start, end), docs):
            out[k] = d + '\n'
            handled.add(k)

    # Trailing comments, and comment lines aligned under a converted one.
    trailing_col = None
    for k in range(n):
        if k in handled:
            continue
        code, comment = codes[k]
        in_body, depth, top = contexts[k]
        if kinds[k] == 'code' and comment is not None:
            trailing_col = None
            stripped = code.strip()
            body = comment[2:]
            after_in_body, after_depth, _ = contexts[k + 1] if k + 1 < n else (False, 0, None)
            ok = (not in_body and not after_in_body and depth == 0 and after_depth == 0
                  and not stripped.startswith('}')
                  and not body.strip().startswith('NOLINT')
                  and (stripped.endswith(';') or
                       # an inline member function: int rank() const { return rank_; }
                       (top != 'enum' and stripped.endswith('}') and
                        stripped.count('{') == stripped.count('}')) or
                       (top == 'enum' and (stripped.endswith(',') or re.match(r'^\w+(\s*=.*)?$', stripped)))))
            if ok:
                col = len(code)
                out[k] = lines[k][:col] + '///<' + escape_texts([body])[0] + '\n'
                trailing_col = col
                handled.add(k)
            continue
        if kinds[k] == 'comment' and trailing_col is not None:
            m = COMMENT_ONLY.match(lines[k].rstrip('\n'))
            if len(m.group(1)) == trailing_col and not in_body and depth == 0:
                out[k] = m.group(1) + '///<' + escape_texts([m.group(2)])[0] + '\n'
                handled.add(k)
                continue
        trailing_col = None

    # Helper macros #undef'd in the same file are not API: the comment above
    # such a #define stays plain (Doxygen would give it to the macro).
    undefined = {m.group(1) for l in lines for m in [re.match(r'\s*#\s*undef\s+(\w+)', l)] if m}

    # Blocks directly above a declaration.
    k = 0
    while k < n:
        if kinds[k] != 'comment' or k in handled:
            k += 1
            continue
        j = k
        while (j < n and kinds[j] == 'comment' and j not in handled and
               not SEPARATOR.match(COMMENT_ONLY.match(lines[j].rstrip('\n')).group(2))):
            j += 1
        if j == k:  # a separator line: stays plain
            k += 1
            continue
        in_body, depth, _ = contexts[k]
        nxt = lines[j].rstrip('\n') if j < n else ''
        attached = (j < n and not in_body and depth == 0 and
                    (kinds[j] == 'code' or (kinds[j] == 'pp' and is_api_define(nxt, undefined))) and
                    not nxt.strip().startswith('}') and not ACCESS.match(nxt) and
                    not HIDDEN_NAMESPACE.search(nxt))
        if attached:
            bodies = [COMMENT_ONLY.match(lines[m].rstrip('\n')).group(2) for m in range(k, j)]
            docs = doc_block(bodies, '///')
            for m, d in zip(range(k, j), docs):
                indent = COMMENT_ONLY.match(lines[m].rstrip('\n')).group(1)
                out[m] = indent + d + '\n'
        k = j
    return out


def main():
    if len(sys.argv) != 2:
        sys.stderr.write('usage: doxygen_filter.py FILE\n')
        return 2
    with open(sys.argv[1], encoding='utf-8') as f:
        lines = [l + '\n' for l in f.read().splitlines()]
    result = filter_lines(lines)
    assert len(result) == len(lines)
    sys.stdout.write(''.join(result))
    return 0


if __name__ == '__main__':
    sys.exit(main())
