"""Helpers shared by the command-line tools (``kahuna-eval``, ``-play``, ``-replay``, ``-demo``, ``-train``).

Every tool reports bad input the same way: one line ``PROGRAM: error: MESSAGE``
on stderr and a nonzero exit code (2 for bad arguments, 1 for a failure while
running), never a traceback; a closed output pipe ends it quietly
(:func:`quiet_on_closed_pipe`).

Files: every user-named input is checked by :func:`check_input_file` before
it is opened (a FIFO, a device or a directory is refused unopened); every
user-named output by the one guard :func:`check_output_file` (never an
input, never a file of another protected kind, an existing file only with
``--force``; the kinds are :data:`FILE_KINDS`, recognised by their first
bytes) and written whole through a temporary file (:func:`replacing`).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import functools
import os
import re
import signal
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any, NoReturn

from kahuna_env.config import DISCARD_RULES, VARIANTS, KahunaConfig
from kahuna_env.files import file_type
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


# ---------------------------------------------------------------------------------------------- files read
def check_input_file(path: str | Path, what: str) -> None:
    """Raise ``ValueError`` (one line) when the input ``path`` is a directory, a FIFO, a device or a socket.

    Every reader of a user-named file (an agent file, a config, a record, a
    report to import, a results store) calls this before it opens the file
    (:mod:`kahuna_env.files`).  ``what`` names the file the reader expects
    (``"an agent file"``).  A missing or unreadable path passes: the open
    that follows reports it.
    """
    kind = file_type(path)
    if kind == "directory":
        raise ValueError(f"{path} is a directory, not {what}")
    if kind == "special":
        raise ValueError(f"{path} is not a regular file (a device, pipe or socket), not {what}")


def is_special_file(path: Path) -> bool:
    """Whether ``path`` exists and is neither a regular file nor a directory (a FIFO, a device, a socket)."""
    return file_type(path) == "special"


# ---------------------------------------------------------------------------------------------- file kinds
HEAD_BYTES = 4096
"""How much of a file :func:`file_kind` reads to recognise it."""
EXPORT_PRODUCER = "kahuna-export"
"""The mark ``kahuna-export`` leaves in its files (the ONNX ``producer_name``), by which they are recognised."""
_TORCH_ARCHIVE = re.compile(
    rb"PK\x03\x04.{26}[^/\x00]{1,200}/(data\.pkl|data/|extra/|code/|constants\.pkl|version|\.data/)", re.DOTALL
)
_KAHUNA_ONNX = re.compile(  # field 1 (ir_version, a varint), then field 2 (producer_name)
    rb"\x08.{1,9}?\x12" + bytes([len(EXPORT_PRODUCER)]) + re.escape(EXPORT_PRODUCER.encode()), re.DOTALL
)


def _json_format(pattern: bytes) -> Callable[[bytes], bool]:
    """A test of a file's head: JSON whose first key is ``"format"`` with a value matching ``pattern``."""
    head = re.compile(rb'\s*\{\s*"format"\s*:\s*"' + pattern + rb'"')
    return lambda data: head.match(data) is not None


@dataclasses.dataclass(frozen=True)
class FileKind:
    """A kind of file the tools write, recognised by its first bytes (:data:`FILE_KINDS`, :func:`file_kind`).

    ``name`` says what it is in messages (``"a results store"``).  A
    ``protected`` kind holds what a user cannot make again cheaply (games,
    a trained network): an output of another kind never replaces it, not
    even with ``--force`` (:func:`check_output_file`).
    """

    name: str
    protected: bool
    matches: Callable[[bytes], bool] = dataclasses.field(repr=False)


STORE = FileKind("a results store", True, lambda head: head.startswith(b"SQLite format 3\x00"))
AGENT = FileKind(
    "an agent file",  # torch.save / torch.jit.save archives (agents, checkpoints), and kahuna-export's ONNX
    True,
    lambda head: _TORCH_ARCHIVE.match(head) is not None or _KAHUNA_ONNX.match(head) is not None,
)
RECORD = FileKind("a game record", True, _json_format(rb"kahuna-record-v\d+"))
REPORT = FileKind("a kahuna report", True, _json_format(rb"kahuna-[a-z-]+-v\d+"))
GIF = FileKind("a GIF", False, lambda head: head.startswith((b"GIF87a", b"GIF89a")))
PNG = FileKind("a PNG image", False, lambda head: head.startswith(b"\x89PNG\r\n\x1a\n"))
MODEL_CARD = FileKind("a model card", False, lambda head: head.startswith(b"# Model card: "))
FILE_KINDS: tuple[FileKind, ...] = (STORE, AGENT, RECORD, REPORT, GIF, PNG, MODEL_CARD)
"""Every kind of file the tools recognise, in the order they are tried (a record before the other reports)."""


def file_kind(path: Path) -> FileKind | None:
    """The kind of the regular file ``path`` (:data:`FILE_KINDS`, by its first :data:`HEAD_BYTES` bytes), or None.

    None also for a missing, unreadable or special file (never opened: a FIFO would block).
    """
    if file_type(path) != "file":
        return None
    try:
        with open(path, "rb") as handle:
            head = handle.read(HEAD_BYTES)
    except (OSError, ValueError):
        return None
    return next((kind for kind in FILE_KINDS if kind.matches(head)), None)


# ---------------------------------------------------------------------------------------------- files written
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
    elif is_special_file(path):
        raise ValueError(f"{option} {path} is not a regular file (a device, pipe or socket); give a file path")
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


def same_file(first: Path, second: Path) -> bool:
    """Whether two paths name the same file (through links, ``..`` and relative paths alike)."""
    try:
        if first.exists() and second.exists():
            return os.path.samefile(first, second)
        return first.resolve() == second.resolve()
    except (OSError, RuntimeError, ValueError):  # unreadable paths, symlink loops, names the system refuses
        return first.absolute() == second.absolute()


Source = Path | str | tuple[str, Path | str]
"""An input of a command: a path, or ``(option, path)`` to name it in messages (``("--db", "r.sqlite")``)."""


def check_output_file(
    option: str,
    path: Path,
    kind: FileKind | None,
    *,
    inputs: Sequence[Source] = (),
    force: bool = False,
) -> None:
    """Raise ``ValueError`` (one line) unless a command may write its output ``path`` of ``kind``; nothing is created.

    The one rule of every tool that writes a user-named file, in this order:

    1. the path must be writable, and not a directory or special file (:func:`check_writable`);
    2. it must not be one of the command's ``inputs`` (agent files, a results store it reads or adds to,
       a report it imports, a record it replays, another of its outputs): refused even with ``--force``,
       the command would destroy what it reads;
    3. an existing file of a protected kind (:data:`FILE_KINDS`: a results store, an agent file, a game
       record, a kahuna report) is replaced only by an output of that same ``kind``, never by another
       even with ``--force``;
    4. any other existing file is replaced only with ``force`` (``--force``).

    The file is then written with :func:`write_text_atomic` / :func:`replacing`.
    """
    check_writable(option, path)
    for source in inputs:
        label, source_path = source if isinstance(source, tuple) else (None, source)
        if same_file(path, Path(source_path)):
            what = f"also {label} {source_path}" if label else f"one of the inputs ({source_path})"
            raise ValueError(f"{option} {path} is {what}; give another output path")
    if not (path.exists() or path.is_symlink()):
        return
    found = file_kind(path)
    if found is not None and found.protected and found != kind:
        writes = f"{option} writes {kind.name}" if kind is not None else f"{option} is not one"
        raise ValueError(f"{option} {path} is {found.name} ({writes}); give another path")
    if not force:
        what = f" ({found.name})" if found is not None else ""
        raise ValueError(f"{option} {path} exists{what}; give another path, or --force to replace it")


def add_force_argument(parser: argparse.ArgumentParser) -> None:
    """``--force``: allow replacing an existing output file (:func:`check_output_file`'s rule)."""
    protected = ", ".join(kind.name for kind in FILE_KINDS if kind.protected)
    parser.add_argument(
        "--force",
        action="store_true",
        help=f"replace an existing output file (never one of the inputs, nor {protected} of another kind)",
    )


@contextlib.contextmanager
def replacing(path: Path) -> Iterator[Path]:
    """A temporary file beside ``path`` (its folder created) to write to; renamed onto ``path`` when the block ends.

    So an output is never half written: if the block raises, the temporary
    file is removed and an earlier ``path`` is kept.  The temporary name ends
    in ``path``'s suffix (writers that choose the format by it, a GIF or a
    PNG, see the right one) and the file gets the mode a plain ``open``
    would give it (:func:`mode_as_created`).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=f".tmp{path.suffix}")
    temporary = Path(name)
    try:
        try:
            mode_as_created(descriptor)
        finally:
            os.close(descriptor)
        yield temporary
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def write_bytes_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through :func:`replacing`; ``OSError`` if that fails (an earlier ``path`` is kept)."""
    with replacing(path) as temporary:
        temporary.write_bytes(data)


def write_text_atomic(path: Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` through :func:`replacing`; ``OSError`` if that fails."""
    write_bytes_atomic(path, text.encode("utf-8"))


def write_gif(program: str, frames: list, path: Path, out: IO[str]) -> None:
    """Save ``frames`` as an animated GIF at ``path`` (through :func:`replacing`); a write error ends ``program``."""
    from kahuna_env.render import save_gif

    try:
        with replacing(path) as temporary:
            save_gif(frames, temporary)
    except (OSError, ValueError) as error:
        exit_with_error(program, f"cannot write --gif {path}: {first_line(error)}", code=1)
    out.write(f"GIF ({len(frames)} frames) written to {path}\n")


def check_gif_path(path: Path, inputs: Sequence[Source] = (), force: bool = False) -> None:
    """Raise ``ValueError`` (one line) unless ``--gif path`` names a ``.gif`` file it may write.

    The rule of :func:`check_output_file` for an output of kind :data:`GIF`.
    """
    if path.suffix.lower() != ".gif":
        raise ValueError(f"--gif {path}: the file name must end in .gif")
    check_output_file("--gif", path, GIF, inputs=inputs, force=force)


# ---------------------------------------------------------------------------------------------- closed pipes
SIGPIPE_EXIT = 128 + 13
"""The exit status of a command whose output pipe was closed (``| head``): a shell's for death by ``SIGPIPE``."""


def quiet_on_closed_pipe(main: Callable[..., int]) -> Callable[..., int]:
    """``main`` made to end quietly, with :data:`SIGPIPE_EXIT`, when its output is piped into a reader that quits.

    ``kahuna-ratings ... | head -2`` closes the pipe after two lines; the
    next print raises ``BrokenPipeError``.  Every entry point is wrapped in
    this, so that ends the command without a traceback; standard output is
    pointed at ``/dev/null`` so that the interpreter's last flush cannot
    raise it again.
    """

    @functools.wraps(main)
    def run(*args: Any, **kwargs: Any) -> int:
        try:
            try:
                return main(*args, **kwargs)
            finally:  # a pipe closed early shows here, not in the interpreter's last flush
                sys.stdout.flush()
        except BrokenPipeError:
            with contextlib.suppress(OSError, ValueError, AttributeError):
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, sys.stdout.fileno())
                os.close(devnull)
            return SIGPIPE_EXIT

    return run


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
