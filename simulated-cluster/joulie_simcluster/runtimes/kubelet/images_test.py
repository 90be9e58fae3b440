from __future__ import annotations

import hashlib
import json
import tarfile
from pathlib import Path

from joulie_simcluster.runtimes.kubelet import images as ki


def test_a_service_image_carries_the_unpacked_pex_root_as_its_last_layer(tmp_path: Path) -> None:
    base = tmp_path / "base.tar"
    with tarfile.open(base, "w") as tar:
        tar.addfile(tarfile.TarInfo("etc"))
    pex = tmp_path / "bin.pex"
    pex.write_bytes(b"PK pex")
    unpacked = tmp_path / "pexroot"
    (unpacked / "unzipped_pexes" / "abc").mkdir(parents=True)
    (unpacked / "unzipped_pexes" / "abc" / "__main__.py").write_text("print()")
    (unpacked / "unzipped_pexes" / "abc" / "__main__.py").chmod(0o644)
    (unpacked / "unzipped_pexes" / "abc" / "dep").symlink_to("../../installed_wheels/x")
    ref, archive = ki.build_service_archive(base, "agent", pex, tmp_path / "out", unpacked)
    assert ref == f"joulie.local/joulie-agent:dev-{hashlib.sha256(b'PK pex').hexdigest()[:12]}"
    with tarfile.open(archive) as tar:
        [entry] = json.loads(tar.extractfile("manifest.json").read())  # type: ignore[union-attr]
        config = json.loads(tar.extractfile(entry["Config"]).read())  # type: ignore[union-attr]
        last = tar.extractfile(entry["Layers"][-1]).read()  # type: ignore[union-attr]
    assert len(entry["Layers"]) == len(config["rootfs"]["diff_ids"]) == 3
    assert f"PEX_ROOT={ki.PEX_ROOT}" in config["config"]["Env"]
    (tmp_path / "last.tar").write_bytes(last)
    with tarfile.open(tmp_path / "last.tar") as tar:
        names = tar.getnames()
        main = tar.getmember("opt/joulie/.pex/unzipped_pexes/abc/__main__.py")
        link = tar.getmember("opt/joulie/.pex/unzipped_pexes/abc/dep")
    assert names[:3] == ["opt", "opt/joulie", "opt/joulie/.pex"] and main.mode == 0o644 and main.mtime == 0
    assert link.issym() and link.linkname == "../../installed_wheels/x"
    # Without an unpacked root: the base and the PEX alone.
    _, plain = ki.build_service_archive(base, "agent", pex, tmp_path / "out2")
    with tarfile.open(plain) as tar:
        assert len(json.loads(tar.extractfile("manifest.json").read())[0]["Layers"]) == 2  # type: ignore[union-attr]


def test_image_archive_is_a_docker_save_layout_with_matching_digests(tmp_path: Path) -> None:
    binary = tmp_path / "pause"
    binary.write_bytes(b"\x7fELF not really")
    ref, archive = ki.build_pause_archive(binary, "v1.35.4", tmp_path / "out")
    assert ref == "joulie.local/pause:v1.35.4"
    with tarfile.open(archive) as tar:
        manifest = json.loads(tar.extractfile("manifest.json").read())  # type: ignore[union-attr]
        [entry] = manifest
        assert entry["RepoTags"] == [ref]
        config_bytes = tar.extractfile(entry["Config"]).read()  # type: ignore[union-attr]
        assert entry["Config"] == hashlib.sha256(config_bytes).hexdigest() + ".json"
        config = json.loads(config_bytes)
        layer = tar.extractfile(entry["Layers"][0]).read()  # type: ignore[union-attr]
    assert config["rootfs"]["diff_ids"] == [f"sha256:{hashlib.sha256(layer).hexdigest()}"]
    assert config["config"]["Entrypoint"] == ["/pause"] and config["architecture"] == "amd64"
    (tmp_path / "layer.tar").write_bytes(layer)
    with tarfile.open(tmp_path / "layer.tar") as tar:
        member = tar.getmember("pause")
        assert member.mode == 0o755 and tar.extractfile(member).read() == binary.read_bytes()  # type: ignore[union-attr]
    # The same inputs give the same image (fixed times, sorted config).
    again = ki.build_pause_archive(binary, "v1.35.4", tmp_path / "again")[1]
    assert hashlib.sha256(again.read_bytes()).digest() == hashlib.sha256(archive.read_bytes()).digest()
