"""Progress lines that can also drive a progress bar.

``ld.design`` and ``ld.compare`` report long work to a ``progress`` callable as lines of text. Where a phase of the
work can count its steps, the line it passes is a ``ProgressLine``: still a ``str`` (a callable that prints, logs or
collects lines works unchanged), with ``phase``, ``done``, ``total``, ``unit`` and ``detail`` beside the text, so that
a front end (the command line's tqdm bars) can show a bar without parsing the text.
"""


class ProgressLine(str):
    """One line of progress text (the ``str`` itself) and how far its phase has come.

    ``phase``: a short name, the same on every line of one phase ("column generation", "double description",
    "baselines", "compare"); ``done`` steps of ``total`` (None when the total is not known in advance; an upper bound
    where the text says "at most"), counted in ``unit``; ``detail``: the rest of the line, what a bar shows beside its
    count."""

    __slots__ = ("detail", "done", "phase", "total", "unit")
    phase: str
    done: int
    total: int | None
    unit: str
    detail: str

    def __new__(cls, text, *, phase, done, total=None, unit="steps", detail=""):
        line = super().__new__(cls, text)
        line.phase, line.done, line.total, line.unit, line.detail = phase, done, total, unit, detail
        return line

    def __reduce__(self):  # pickle and copy keep the counts
        return _line, (str(self), {name: getattr(self, name) for name in self.__slots__})


def _line(text, counts):
    return ProgressLine(text, **counts)
