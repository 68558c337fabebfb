"""The scenario pack: Doom scenarios that do not ship with the ``vizdoom`` wheel.

The Sample Factory work trained and reported on scenarios (battle, battle2) and maps (ssl2,
dwango5, freedm) of its own; they ship inside the ``sample-factory`` 2.1.1 wheel on the package
index (MIT; freedm.wad BSD-3). ``sf-envs scenarios fetch`` downloads that wheel without its
dependencies, checks its hash, and extracts only the scenario files into a cache folder. Nothing
downloads implicitly: an env that needs the pack and does not find it raises
:class:`PackMissingError`, which names the command.

Where the pack lives, first match wins: an explicit folder (``--dir``), the environment variable
``SF_ENVS_SCENARIOS``, ``$XDG_CACHE_HOME/sf-envs/scenarios``, ``~/.cache/sf-envs/scenarios``. Any
folder of ``.cfg``/``.wad`` files works the same way.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from sf_envs.cache import user_cache
from sf_envs.errors import OptionError

__all__ = [
    "PACK_ENV_VAR",
    "SAMPLE_FACTORY_PACK",
    "PackMissingError",
    "PackSource",
    "fetch_pack",
    "pack_dir",
    "pack_file",
    "read_manifest",
]

PACK_ENV_VAR = "SF_ENVS_SCENARIOS"
MANIFEST = "pack.json"


@dataclass(frozen=True)
class PackSource:
    """Where the pack's files come from: a pinned wheel and the folder inside it."""

    package: str
    version: str
    sha256: str
    member_prefix: str
    license: str

    @property
    def requirement(self) -> str:
        return f"{self.package}=={self.version}"


SAMPLE_FACTORY_PACK = PackSource(
    package="sample-factory",
    version="2.1.1",
    sha256="4acaef95c3790f4328bf839e07631737879f3c6409d22ee6e5d67635db8482a7",
    member_prefix="sf_examples/vizdoom/doom/scenarios/",
    license="MIT (Sample Factory); freedm.wad: BSD-3-Clause (Freedoom)",
)


class PackMissingError(OptionError):
    """A scenario needs a file of the pack that is not installed; the message names the fetch."""


def pack_dir(directory: str | os.PathLike[str] | None = None) -> Path:
    """The pack's folder: ``directory``, else ``$SF_ENVS_SCENARIOS``, else the XDG cache."""
    if directory is not None:
        return Path(directory).expanduser()
    if os.environ.get(PACK_ENV_VAR):
        return Path(os.environ[PACK_ENV_VAR]).expanduser()
    return user_cache("scenarios")


def pack_file(name: str, directory: str | os.PathLike[str] | None = None) -> str:
    """The path of the pack's file ``name`` (e.g. ``"battle.cfg"``).

    Raises:
        PackMissingError: If the file is not there, naming the command that fetches it.
    """
    path = pack_dir(directory) / name
    if not path.is_file():
        raise PackMissingError(
            f"{name} is part of the scenario pack, which is not installed in {path.parent}: "
            f"run `sf-envs scenarios fetch` (downloads {SAMPLE_FACTORY_PACK.requirement}, "
            f"about 9 MB, and extracts its Doom scenarios), or point {PACK_ENV_VAR} at a folder "
            "that holds it"
        )
    return str(path)


def read_manifest(directory: str | os.PathLike[str] | None = None) -> dict | None:
    """What ``fetch_pack`` recorded about the installed pack, or None (not fetched by us)."""
    path = pack_dir(directory) / MANIFEST
    if not path.is_file():
        return None
    return json.loads(path.read_text())


def fetch_pack(
    directory: str | os.PathLike[str] | None = None, source: PackSource = SAMPLE_FACTORY_PACK
) -> Path:
    """Downloads the pinned wheel with pip (the user's index settings apply), checks its hash,
    and installs its scenario files into the pack folder, replacing any earlier pack at once.

    Returns:
        The pack folder.

    Raises:
        RuntimeError: If pip fails or the wheel's hash differs from the pinned one.
    """
    target = pack_dir(directory)
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="sf_pack_download_") as download:
        wheel = _download_wheel(source, Path(download))
        staging = Path(tempfile.mkdtemp(prefix=".sf_pack_", dir=target.parent))
        try:
            files = _extract(wheel, source.member_prefix, staging)
            manifest = {
                "source": source.requirement,
                "wheel": wheel.name,
                "sha256": source.sha256,
                "license": source.license,
                "files": files,
            }
            (staging / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
            _replace_folder(staging, target)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
    return target


def _download_wheel(source: PackSource, folder: Path) -> Path:
    command = [sys.executable, "-m", "pip", "download", source.requirement]
    command += ["--no-deps", "--only-binary=:all:", "--quiet", "--dest", str(folder)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    wheels = sorted(folder.glob("*.whl"))
    if done.returncode != 0 or len(wheels) != 1:
        raise RuntimeError(
            f"pip could not download {source.requirement} (exit {done.returncode}): "
            f"{done.stderr.strip()[-800:]}\nCheck the network or your pip index settings, or "
            f"extract the wheel's {source.member_prefix} yourself and point {PACK_ENV_VAR} at it."
        )
    digest = hashlib.sha256(wheels[0].read_bytes()).hexdigest()
    if digest != source.sha256:
        raise RuntimeError(
            f"{wheels[0].name} has sha256 {digest}, not the pinned {source.sha256}: the index "
            "served a different file; nothing was installed"
        )
    return wheels[0]


def _extract(wheel: Path, prefix: str, folder: Path) -> list[str]:
    """Extracts the members under ``prefix`` (flat, by base name) and returns their names."""
    names = []
    with zipfile.ZipFile(wheel) as archive:
        for member in archive.infolist():
            name = member.filename[len(prefix) :]
            if not member.filename.startswith(prefix) or not name or "/" in name:
                continue
            with archive.open(member) as src, open(folder / name, "wb") as dst:
                shutil.copyfileobj(src, dst)
            names.append(name)
    if not names:
        raise RuntimeError(f"{wheel.name} holds no files under {prefix}")
    return sorted(names)


def _replace_folder(new: Path, target: Path) -> None:
    """Puts ``new`` at ``target``; an earlier pack is moved aside first and removed after."""
    old = None
    if target.exists():
        old = Path(tempfile.mkdtemp(prefix=".sf_pack_old_", dir=target.parent))
        os.replace(target, old / "pack")
    os.replace(new, target)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
