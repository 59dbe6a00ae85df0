"""A trained LeRobot policy (ACT, Diffusion, any LeRobot policy type) from a local pretrained
folder: the ``pretrained_model`` directory ``lerobot-train`` saves (``config.json``,
``model.safetensors`` and the processors' ``policy_preprocessor.json`` /
``policy_postprocessor.json``).

Loaded as LeRobot's own tools load one (``get_policy_class(type).from_pretrained`` and
``make_pre_post_processors`` with the folder, the device overridden), and stepped as
``lerobot-record`` steps it: the observation to tensors (images as float CHW in [0, 1]), the
preprocessor (normalisation), ``select_action`` (which keeps the action chunk's queue: one
inference per chunk, then queued actions), the postprocessor (unnormalisation). Nothing is
downloaded: the folder must be complete.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from physai_ros.datasets.features import IMAGE_PREFIX, ROBOT_TYPE, TASK
from physai_ros.datasets.lerobot_io import lerobot_version
from physai_ros.errors import InvalidInput

STATE = "observation.state"
CONFIG = "config.json"


def _policy_type(folder: Path) -> str:
    """The policy type a pretrained folder declares (``config.json``'s ``type``)."""
    if not folder.is_dir():
        raise InvalidInput(f"policy folder {folder} does not exist")
    config = folder / CONFIG
    if not config.is_file():
        raise InvalidInput(
            f"{folder} has no {CONFIG}: give the 'pretrained_model' folder lerobot-train saved "
            "(e.g. outputs/train/<run>/checkpoints/last/pretrained_model)"
        )
    try:
        kind = json.loads(config.read_text()).get("type")
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"{config} is not JSON: {exc}") from None
    if not isinstance(kind, str) or not kind:
        raise InvalidInput(f"{config} names no policy 'type'")
    return kind


class LeRobotPolicy:
    """A pretrained LeRobot policy on ``device`` (``cpu``, ``cuda``, ``mps``)."""

    def __init__(self, folder: Path, device: str = "cpu", task: str = TASK) -> None:
        folder = Path(folder).expanduser().resolve()
        kind = _policy_type(folder)
        lerobot_version()
        import torch
        from lerobot.policies.factory import get_policy_class, make_pre_post_processors

        try:
            cls = get_policy_class(kind)
        except (NotImplementedError, ValueError) as exc:
            raise InvalidInput(f"{folder}: LeRobot has no policy type {kind!r} ({exc})") from None
        self.torch, self.device, self.task = torch, torch.device(device), task
        self.policy = cls.from_pretrained(str(folder), local_files_only=True)
        self.policy.config.device = device
        self.policy.to(self.device)
        self.policy.eval()
        on_device = {"device": device}
        for name in ("policy_preprocessor.json", "policy_postprocessor.json"):
            if not (folder / name).is_file():
                raise InvalidInput(
                    f"{folder} has no {name} (saved by lerobot-train of LeRobot 0.4 and later)"
                )
        self.pre, self.post = make_pre_post_processors(
            self.policy.config,
            pretrained_path=str(folder),
            preprocessor_overrides={"device_processor": on_device},
            postprocessor_overrides={"device_processor": on_device},
        )
        features = self.policy.config.input_features
        self.image_features = tuple(k for k in features if k.startswith(IMAGE_PREFIX))
        self.image_shapes = {k: tuple(features[k].shape) for k in self.image_features}  # CHW
        self.needs_state = STATE in features
        self.fps = None  # a pretrained folder does not record its dataset's frame rate
        self.description = f"LeRobot {kind} policy from {folder} on {device}"

    def reset(self) -> None:
        self.policy.reset()

    def step(self, observation: dict[str, np.ndarray]) -> np.ndarray:
        torch = self.torch
        batch: dict = {}
        for key, value in observation.items():
            tensor = torch.from_numpy(np.array(value, copy=True))  # writable, contiguous
            if key.startswith(IMAGE_PREFIX):  # HWC uint8 -> CHW float in [0, 1]
                tensor = tensor.to(torch.float32).div(255.0).permute(2, 0, 1).contiguous()
            else:
                tensor = tensor.to(torch.float32)
            batch[key] = tensor.unsqueeze(0).to(self.device)
        batch["task"], batch["robot_type"] = self.task, ROBOT_TYPE
        with torch.inference_mode():
            action = self.post(self.policy.select_action(self.pre(batch)))
        return action.squeeze(0).to("cpu").numpy().astype(float)

    @property
    def queue_depth(self) -> int:
        """The actions of the current chunk not yet taken (ACT's ``_action_queue``, Diffusion's
        ``_queues['action']``; 0 for policies that keep none)."""
        queue = getattr(self.policy, "_action_queue", None)
        if queue is None:
            queue = (getattr(self.policy, "_queues", None) or {}).get("action")
        return len(queue) if queue is not None else 0
