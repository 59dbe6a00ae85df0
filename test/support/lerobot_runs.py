"""The two LeRobot-side commands a policy test needs, as users run them: ``physai record`` of
scripted picks, and LeRobot's own ``lerobot-train`` of a small ACT or Diffusion on CPU (no
pretrained backbone: nothing downloads)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

PHYSAI = str(Path(sys.executable).parent / "physai")
REPO = "local/so101_pick"


def record(
    root: Path, *args: str, check: bool = True, env: dict | None = None
) -> subprocess.CompletedProcess:
    """``physai record --output root <args>``; asserts success unless ``check`` is False."""
    result = subprocess.run(
        [PHYSAI, "record", "--output", str(root), "--no-progress", *args],
        capture_output=True,
        text=True,
        timeout=900,
        env=env,
    )
    if check:
        assert result.returncode == 0, result.stdout + result.stderr
    return result


# small configurations of each policy type, for a few CPU steps (no pretrained backbone)
SMALL = {
    "act": (
        "--policy.pretrained_backbone_weights=null", "--policy.dim_model=64",
        "--policy.n_encoder_layers=1", "--policy.n_decoder_layers=1",
        "--policy.dim_feedforward=128", "--policy.chunk_size=10", "--policy.n_action_steps=10",
    ),
    "diffusion": (
        "--policy.pretrained_backbone_weights=null", "--policy.down_dims=[64,128]",
        "--policy.num_inference_steps=4", "--policy.n_action_steps=8",
    ),
}  # fmt: skip


def train(dataset: Path, out: Path, kind: str = "act", steps: int = 20) -> Path:
    """``steps`` steps of a small policy of type ``kind`` (``SMALL``) on ``dataset`` by
    LeRobot's ``lerobot-train``; returns the ``pretrained_model`` folder it saved."""
    result = subprocess.run(
        [
            sys.executable, "-m", "lerobot.scripts.lerobot_train",
            f"--dataset.repo_id={REPO}", f"--dataset.root={dataset}",
            f"--policy.type={kind}", "--policy.device=cpu", "--policy.push_to_hub=false",
            *SMALL[kind], f"--steps={steps}", "--batch_size=2",
            "--num_workers=0", f"--save_freq={steps}", f"--log_freq={steps}",
            "--wandb.enable=false", f"--output_dir={out}",
        ],
        capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"step:{steps}" in result.stderr + result.stdout  # it logged its last step
    model = out / "checkpoints" / "last" / "pretrained_model"
    assert (model / "model.safetensors").is_file() and (model / "config.json").is_file()
    return model


def record_and_train(base: Path, episodes: int, seed: int, steps: int) -> tuple[Path, Path]:
    """``episodes`` scripted picks with the front camera at 64×48 (small enough for CPU
    training) and a small ACT trained ``steps`` steps on them: (dataset, pretrained_model)."""
    dataset = base / "picks"
    record(dataset, "--episodes", str(episodes), "--seed", str(seed), "--cameras", "front_cam",
           "--width", "64", "--height", "48")  # fmt: skip
    return dataset, train(dataset, base / "act", "act", steps=steps)
