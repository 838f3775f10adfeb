"""Helpers shared by the command-line tools (``kahuna-eval``, ``-play``, ``-replay``, ``-demo``, ``-train``).

Every tool reports bad input the same way: one line ``PROGRAM: error: MESSAGE``
on stderr and a nonzero exit code (2 for bad arguments, 1 for a failure while
running), never a traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any, NoReturn

from kahuna_env.config import DISCARD_RULES, VARIANTS, KahunaConfig
from kahuna_env.version import __version__


class OneLineParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors are a single line (no usage dump), exit code 2.

    Every tool built on it answers ``--version`` with ``PROG VERSION`` (kahuna-rl's version, exit code 0).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if "--version" not in self._option_string_actions:
            self.add_argument("--version", action="version", version=f"%(prog)s {__version__}")

    def error(self, message: str) -> NoReturn:
        """Print ``PROG: error: MESSAGE`` and exit with code 2."""
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def first_line(error: BaseException | str) -> str:
    """The first line of an error's message (its type name when the message is empty)."""
    text = str(error).strip()
    if text:
        return text.splitlines()[0]
    return type(error).__name__ if isinstance(error, BaseException) else "error"


def terminal_safe(text: str) -> str:
    """``text`` with every character a terminal would act on shown as an escape, the rest unchanged.

    Control characters (``\\x1b[2J`` clears the screen, ``\\x1b]0;...`` sets
    the window title, C1 controls, DEL), line separators and invisible
    format characters (bidirectional overrides) become ``\\xNN`` /
    ``\\uNNNN`` text, so a label or a name read from a file prints as what
    it holds.  Printable text, spaces and letters of any script included, is
    unchanged.
    """
    if text.isprintable():
        return text
    return "".join(char if char.isprintable() else ascii(char)[1:-1] for char in text)


def exit_with_error(program: str, message: str, code: int = 2) -> NoReturn:
    """Print ``PROGRAM: error: <first line of message>`` to stderr (:func:`terminal_safe`) and exit with ``code``."""
    print(f"{program}: error: {terminal_safe(first_line(message))}", file=sys.stderr)
    raise SystemExit(code)


class Terminated(KeyboardInterrupt):
    """A stop signal handled as Ctrl-C (:func:`signals_as_interrupt`): ``SIGTERM`` (``kill``, ``timeout``, a
    container or job scheduler stopping the command) or ``SIGHUP`` (its terminal closed).

    ``number`` is the signal; a command it stops exits with ``128 + number`` (143 for ``SIGTERM``).
    """

    def __init__(self, number: int = signal.SIGTERM) -> None:
        super().__init__(signal.Signals(number).name)
        self.number = int(number)


@contextlib.contextmanager
def signals_as_interrupt(*numbers: int) -> Iterator[None]:
    """While inside: each signal of ``numbers`` raises :class:`Terminated` (a ``KeyboardInterrupt``).

    So a command stopped by one ends as on Ctrl-C (its finished work kept,
    its one line printed); the previous handlers are restored after.  Only
    the main thread may set handlers: elsewhere nothing changes.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def raise_terminated(number: int, frame: object) -> None:
        raise Terminated(number)

    previous = {}
    try:
        for number in numbers:
            previous[number] = signal.signal(number, raise_terminated)
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def missing_extra(extra: str, error: ImportError | str) -> str:
    """The one line that says which extra of kahuna-rl to install, and what failed to import."""
    install = f'pip install "kahuna-rl[{extra}]"; in a checkout pip install -e ".[{extra}]"'
    return f"needs the {extra} extra ({install}): {first_line(error)}"


def require_extra(program: str, extra: str, *modules: str) -> None:
    """End ``program`` with :func:`missing_extra`'s one line (exit code 2) unless every module imports.

    The console scripts of the layers above the environment (``kahuna-train`` needs ``torch``, the
    ``train`` extra; ``kahuna-serve`` the ``web`` extra) call this before importing them.
    """
    import importlib

    for module in modules:
        try:
            importlib.import_module(module)
        except ImportError as error:
            exit_with_error(program, missing_extra(extra, error))


def umask() -> int:
    """This process's file mode creation mask (read without changing it where the system tells it)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)  # elsewhere: the only portable way to read it is to set it, and set it back at once
    os.umask(mask)
    return mask


def mode_as_created(descriptor: int) -> None:
    """Give a file made by :func:`tempfile.mkstemp` (mode 0600) the mode a plain ``open`` would: 0666 less the umask.

    So an output written through a temporary file and renamed into place is
    readable by whom the user's umask allows, as any file the user creates.
    """
    os.fchmod(descriptor, 0o666 & ~umask())


def write_gif(program: str, frames: list, path: Path, out: IO[str]) -> None:
    """Save ``frames`` as an animated GIF at ``path`` (creating its folder); a write error ends ``program``."""
    from kahuna_env.render import save_gif

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        save_gif(frames, path)
    except (OSError, ValueError) as error:
        exit_with_error(program, f"cannot write --gif {path}: {first_line(error)}", code=1)
    out.write(f"GIF ({len(frames)} frames) written to {path}\n")


def check_writable(option: str, path: Path, directory: bool = False) -> None:
    """Raise ``ValueError`` (one line) unless the file (or, with ``directory``, the folder) ``path`` can be written.

    Checked before any work, so that a game or an evaluation is never lost to
    a bad output path; nothing is created.  A missing folder is fine when
    its nearest existing parent is a writable folder (it is created when the
    output is written).
    """
    if directory:
        if path.exists() and not path.is_dir():
            raise ValueError(f"{option} {path} is a file; give a directory")
    elif path.is_dir():
        raise ValueError(f"{option} {path} is a directory; give a file path")
    elif path.exists() and not os.access(path, os.W_OK):
        raise ValueError(f"{option} {path}: the file is not writable")
    folder = path if directory else path.parent
    folder = folder.absolute()
    while not folder.exists() and not folder.is_symlink():
        folder = folder.parent
    if not folder.is_dir():
        raise ValueError(f"{option} {path}: {folder} is not a directory")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise ValueError(f"{option} {path}: the directory {folder} is not writable")


def check_gif_path(path: Path, inputs: Sequence[Path] = (), force: bool = False) -> None:
    """Raise ``ValueError`` (one line) unless ``--gif path`` names a writable ``.gif`` file.

    The rule of :func:`check_output_file`: never one of ``inputs``, and an
    existing file only when it is a GIF (or with ``force``).
    """
    if path.suffix.lower() != ".gif":
        raise ValueError(f"--gif {path}: the file name must end in .gif")
    check_output_file(
        "--gif", path, inputs=inputs, own_kind=lambda file: file_starts_with(file, b"GIF8"), kind="a GIF", force=force
    )


def same_file(first: Path, second: Path) -> bool:
    """Whether two paths name the same file (through links, ``..`` and relative paths alike)."""
    try:
        if first.exists() and second.exists():
            return os.path.samefile(first, second)
        return first.resolve() == second.resolve()
    except (OSError, RuntimeError):  # unreadable paths, symlink loops
        return first.absolute() == second.absolute()


def file_starts_with(path: Path, pattern: bytes | re.Pattern[bytes], size: int = 4096) -> bool:
    """Whether the file ``path`` starts with ``pattern`` (bytes, or a regex over its first ``size`` bytes).

    False if unreadable.  Reads a bounded head only, so sniffing a huge file costs nothing.
    """
    try:
        with open(path, "rb") as handle:
            head = handle.read(size)
    except OSError:
        return False
    if isinstance(pattern, bytes):
        return head.startswith(pattern)
    return pattern.match(head) is not None


def json_format_is(path: Path, format_name: str) -> bool:
    """Whether ``path`` is a JSON file whose first key is ``"format": format_name`` (how the tools write theirs)."""
    return file_starts_with(path, re.compile(rb'\s*\{\s*"format"\s*:\s*"' + re.escape(format_name.encode()) + rb'"'))


def check_output_file(
    option: str,
    path: Path,
    *,
    inputs: Sequence[Path] = (),
    own_kind: Callable[[Path], bool] | None = None,
    kind: str = "",
    force: bool = False,
) -> None:
    """Raise ``ValueError`` (one line) unless a tool may write its output ``path``; nothing is created.

    The rule every tool that writes a user-named file follows: the path must be
    writable (:func:`check_writable`); it must not be one of the tool's
    ``inputs`` (refused even with ``--force``: the tool would destroy what it
    reads); and an existing file is overwritten only when it is of the tool's
    own kind of output (``own_kind(path)``, e.g. an earlier report of the same
    tool, named ``kind`` in the message) or with ``force`` (``--force``).
    """
    check_writable(option, path)
    for source in inputs:
        if same_file(path, Path(source)):
            raise ValueError(f"{option} {path} is one of the inputs ({source}); give another output path")
    if (path.exists() or path.is_symlink()) and not force and not (own_kind is not None and own_kind(path)):
        what = f"not {kind}" if kind else "not written by this tool"
        raise ValueError(f"{option} {path} exists and is {what}; give another path, or --force to overwrite it")


def write_text_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file in its folder (created), so it is never half-written.

    ``OSError`` if that fails; the temporary file is removed and an earlier ``path`` is kept.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        temporary.write_text(text, encoding="utf-8")
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def add_force_argument(parser: argparse.ArgumentParser) -> None:
    """``--force``: allow overwriting an existing output file that is not of the tool's own kind."""
    parser.add_argument(
        "--force",
        action="store_true",
        help="overwrite an existing output file even if this tool did not write it (never one of the inputs)",
    )


def _integer_at_least(text: str, low: int, kind: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a {kind} integer, got {text!r}") from None
    if value < low:
        raise argparse.ArgumentTypeError(f"expected a {kind} integer, got {value}")
    return value


def positive_int(text: str) -> int:
    """argparse type: an integer >= 1."""
    return _integer_at_least(text, 1, "positive")


def non_negative_int(text: str) -> int:
    """argparse type: an integer >= 0."""
    return _integer_at_least(text, 0, "non-negative")


def even_games(text: str) -> int:
    """argparse type: a positive even number of games per pairing."""
    value = positive_int(text)
    if value % 2:
        raise argparse.ArgumentTypeError(
            f"must be even so that every pairing plays both seats equally (each deal twice), got {value}"
        )
    return value


def add_rule_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--variant`` and ``--discard-rule`` (the rule options of the games) to ``parser``."""
    defaults = KahunaConfig()
    parser.add_argument(
        "--variant", choices=VARIANTS, default=defaults.variant, help=f"rule variant (default {defaults.variant})"
    )
    parser.add_argument(
        "--discard-rule",
        choices=DISCARD_RULES,
        default=defaults.discard_rule,
        help=f"discard rule (default {defaults.discard_rule})",
    )
