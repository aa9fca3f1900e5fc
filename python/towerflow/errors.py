"""The errors towerflow raises, as TF1's ``tf.errors``.

Every error from the engine is an :class:`OpError` subclass chosen by its
status code (the codes are TF's: ``OutOfRangeError`` is 11, ...). The message is
the engine's, naming the node, op, file, offset, shapes or devices involved.
"""

OK = 0
CANCELLED = 1
UNKNOWN = 2
INVALID_ARGUMENT = 3
DEADLINE_EXCEEDED = 4
NOT_FOUND = 5
ALREADY_EXISTS = 6
PERMISSION_DENIED = 7
RESOURCE_EXHAUSTED = 8
FAILED_PRECONDITION = 9
ABORTED = 10
OUT_OF_RANGE = 11
UNIMPLEMENTED = 12
INTERNAL = 13
UNAVAILABLE = 14
DATA_LOSS = 15
UNAUTHENTICATED = 16


class OpError(Exception):
    """An error of a graph operation (TF1's tf.errors.OpError)."""

    def __init__(self, node_def, op, message, error_code):
        super().__init__(message)
        self._node_def = node_def
        self._op = op
        self._message = message
        self._error_code = error_code

    @property
    def message(self):
        return self._message

    @property
    def op(self):
        return self._op

    @property
    def node_def(self):
        return self._node_def

    @property
    def error_code(self):
        return self._error_code

    def __str__(self):
        return self._message


def _make(name, code, doc):
    def __init__(self, node_def, op, message, *args):
        OpError.__init__(self, node_def, op, message, code)

    return type(name, (OpError,), {"__init__": __init__, "__doc__": doc})


CancelledError = _make("CancelledError", CANCELLED, "An operation or step was cancelled.")
UnknownError = _make("UnknownError", UNKNOWN, "Unknown error.")
InvalidArgumentError = _make("InvalidArgumentError", INVALID_ARGUMENT, "An operation got an invalid argument.")
DeadlineExceededError = _make("DeadlineExceededError", DEADLINE_EXCEEDED, "A deadline expired.")
NotFoundError = _make("NotFoundError", NOT_FOUND, "A requested entity was not found.")
AlreadyExistsError = _make("AlreadyExistsError", ALREADY_EXISTS, "An entity already exists.")
PermissionDeniedError = _make("PermissionDeniedError", PERMISSION_DENIED, "Permission denied.")
ResourceExhaustedError = _make("ResourceExhaustedError", RESOURCE_EXHAUSTED, "A resource was exhausted.")
FailedPreconditionError = _make("FailedPreconditionError", FAILED_PRECONDITION,
                                "The system is not in a state to run the operation.")
AbortedError = _make("AbortedError", ABORTED, "The operation was aborted.")
OutOfRangeError = _make("OutOfRangeError", OUT_OF_RANGE, "Iteration past the end (a queue closed and empty).")
UnimplementedError = _make("UnimplementedError", UNIMPLEMENTED, "The operation is not implemented.")
InternalError = _make("InternalError", INTERNAL, "An internal invariant broke.")
UnavailableError = _make("UnavailableError", UNAVAILABLE, "The runtime is unavailable.")
DataLossError = _make("DataLossError", DATA_LOSS, "Unrecoverable data loss or corruption.")
UnauthenticatedError = _make("UnauthenticatedError", UNAUTHENTICATED, "The request lacks credentials.")

_BY_CODE = {
    CANCELLED: CancelledError,
    UNKNOWN: UnknownError,
    INVALID_ARGUMENT: InvalidArgumentError,
    DEADLINE_EXCEEDED: DeadlineExceededError,
    NOT_FOUND: NotFoundError,
    ALREADY_EXISTS: AlreadyExistsError,
    PERMISSION_DENIED: PermissionDeniedError,
    RESOURCE_EXHAUSTED: ResourceExhaustedError,
    FAILED_PRECONDITION: FailedPreconditionError,
    ABORTED: AbortedError,
    OUT_OF_RANGE: OutOfRangeError,
    UNIMPLEMENTED: UnimplementedError,
    INTERNAL: InternalError,
    UNAVAILABLE: UnavailableError,
    DATA_LOSS: DataLossError,
    UNAUTHENTICATED: UnauthenticatedError,
}


def exception_type_from_error_code(error_code):
    return _BY_CODE.get(error_code, UnknownError)


def error_code_from_exception_type(cls):
    for code, c in _BY_CODE.items():
        if c is cls:
            return code
    return UNKNOWN


def _from_status(code, message):
    """The exception for an engine Status (called by towerflow._core)."""
    return exception_type_from_error_code(code)(None, None, message)
