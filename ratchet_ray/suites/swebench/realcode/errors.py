"""The one error of the real-project build: its message is the line the CLI prints."""


class RealcodeError(RuntimeError):
    """A bad input or a failed step of ``make-instances``; the message names it and the fix."""
