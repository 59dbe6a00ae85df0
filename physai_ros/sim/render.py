"""Offscreen camera images of a MuJoCo scene, on whatever OpenGL the machine has.

Why not ``mujoco.Renderer``: it takes its OpenGL from ``MUJOCO_GL`` as read when ``mujoco`` is
first imported (GLFW when unset, which needs a display), so a process that imported MuJoCo
before it knew it wanted images cannot choose any more. Here the OpenGL is chosen when the first
camera is made: ``MUJOCO_GL`` when the user set it (``egl`` or ``osmesa``), else the first of
EGL (a GPU: fast) and OSMesa (software: any machine with ``libosmesa6``) that renders in a
throw-away process -- each backend fixes PyOpenGL's platform for the whole process, so the
probes cannot share one. A machine with neither gets ``RenderUnavailable`` naming what to
install.

Several cameras of one scene render from one scene update: the geometry is collected once per
frame and only the camera moves between the images (``mjv_updateCamera``).
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from collections.abc import Sequence

import mujoco
import numpy as np

from physai_ros.errors import PhysaiError

BACKENDS = ("egl", "osmesa")  # the offscreen OpenGLs, fastest first
QUALITIES = ("full", "fast")
FAST_SHADOW_SIZE = 1024  # [px] shadow map of the "fast" quality (the models ask for 4096)
PROBE = """
import importlib, mujoco
gl = importlib.import_module("mujoco." + {backend!r}).GLContext(8, 8)
gl.make_current()
model = mujoco.MjModel.from_xml_string("<mujoco><worldbody><geom size='1'/></worldbody></mujoco>")
mujoco.MjrContext(model, mujoco.mjtFontScale.mjFONTSCALE_100)
"""
PROBE_TIMEOUT = 60.0  # [s] one probe: a fresh interpreter importing MuJoCo, on a loaded machine
INSTALL = (
    "install OSMesa ('sudo apt-get install libosmesa6': software rendering, any machine) or a GPU "
    "driver with EGL, or set MUJOCO_GL to an OpenGL that works here"
)


def camera_names(text: str) -> list[str]:
    """A comma-separated list of camera names (``cameras.names``, ``--cameras``): blanks
    ignored, each once."""
    names = [name.strip() for name in text.split(",") if name.strip()]
    return list(dict.fromkeys(names))


class RenderUnavailable(PhysaiError):
    """No OpenGL this process can render camera images with."""


_chosen: str | None = None  # this process's backend, once chosen (PyOpenGL allows one)


def probe(backend: str) -> str | None:
    """Whether ``backend`` renders here, tried in a fresh interpreter: None if it does, else
    the last line of its error."""
    env = dict(os.environ, MUJOCO_GL=backend)
    env.pop("PYOPENGL_PLATFORM", None)
    try:
        run = subprocess.run(
            [sys.executable, "-c", PROBE.format(backend=backend)],
            env=env,
            capture_output=True,
            text=True,
            timeout=PROBE_TIMEOUT,
        )
    except subprocess.TimeoutExpired:
        return f"no answer within {PROBE_TIMEOUT:.0f} s"
    if run.returncode == 0:
        return None
    lines = [line for line in run.stderr.strip().splitlines() if line.strip()]
    return lines[-1] if lines else f"exit code {run.returncode}"


def choose_backend() -> str:
    """This process's offscreen OpenGL (see the module docstring); chosen once, and exported
    as ``MUJOCO_GL`` for the processes it starts."""
    global _chosen
    if _chosen is not None:
        return _chosen
    asked = os.environ.get("MUJOCO_GL", "").lower().strip()
    if asked in BACKENDS:
        _chosen = asked
        return asked
    failures = {}
    for backend in BACKENDS:
        failure = probe(backend)
        if failure is None:
            _chosen = backend
            os.environ["MUJOCO_GL"] = backend
            return backend
        failures[backend] = failure
    tried = "; ".join(f"{b}: {why}" for b, why in failures.items())
    note = f" (MUJOCO_GL={asked!r} is no offscreen OpenGL)" if asked else ""
    raise RenderUnavailable(f"no offscreen OpenGL renders here{note} ({tried}): {INSTALL}")


class Cameras:
    """Images [height, width, 3] uint8 from the named cameras of ``model``, all at one
    resolution. ``backend``: ``egl`` or ``osmesa``; None chooses (``choose_backend``).

    quality: ``full`` renders the scene as its model asks (4096 px shadow maps, the table's
    reflection, 4× multisampling); ``fast`` keeps the shadows at 1024 px and drops the
    reflection and the multisampling, which in software rendering costs a quarter as much
    (``physai bench cameras``) -- what a dataset of thousands of frames can afford.
    """

    def __init__(
        self,
        model: mujoco.MjModel,
        names: Sequence[str],
        height: int,
        width: int,
        backend: str | None = None,
        quality: str = "full",
    ) -> None:
        if quality not in QUALITIES:
            raise ValueError(f"render quality {quality!r}: choose one of {QUALITIES}")
        if height < 1 or width < 1:
            raise ValueError(f"camera resolution must be positive, got {height}x{width}")
        ids = {}
        for name in names:
            cam = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_CAMERA, name)
            if cam < 0:
                known = [model.camera(i).name for i in range(model.ncam)]
                raise ValueError(f"no camera {name!r} in the model (it has {known})")
            ids[name] = cam
        if not ids:
            raise ValueError("no cameras named")
        self.backend = backend or choose_backend()
        try:
            context = importlib.import_module(f"mujoco.{self.backend}").GLContext
            self.gl = context(width, height)
            self.gl.make_current()
        except Exception as exc:  # what each OpenGL raises differs (ImportError, RuntimeError…)
            raise RenderUnavailable(
                f"{self.backend} OpenGL does not start: {exc}; {INSTALL}"
            ) from exc
        # the offscreen buffer is sized by the model's visual settings: at least the images
        model.vis.global_.offwidth = max(model.vis.global_.offwidth, width)
        model.vis.global_.offheight = max(model.vis.global_.offheight, height)
        if quality == "fast":
            model.vis.quality.shadowsize = min(model.vis.quality.shadowsize, FAST_SHADOW_SIZE)
            model.vis.quality.offsamples = 0
        self.model, self.ids, self.height, self.width = model, ids, height, width
        self.context = mujoco.MjrContext(model, mujoco.mjtFontScale.mjFONTSCALE_100)
        mujoco.mjr_setBuffer(mujoco.mjtFramebuffer.mjFB_OFFSCREEN, self.context)
        self.scene = mujoco.MjvScene(model, maxgeom=10_000)
        if quality == "fast":
            self.scene.flags[mujoco.mjtRndFlag.mjRND_REFLECTION] = 0
        self.option = mujoco.MjvOption()
        self.rect = mujoco.MjrRect(0, 0, width, height)
        self.camera = mujoco.MjvCamera()
        self.camera.type = mujoco.mjtCamera.mjCAMERA_FIXED

    def render(self, data: mujoco.MjData) -> dict[str, np.ndarray]:
        """One image per camera of the scene in ``data`` now (the geometry collected once)."""
        self.gl.make_current()
        images = {}
        for i, (name, cam) in enumerate(self.ids.items()):
            self.camera.fixedcamid = cam
            if i == 0:
                mujoco.mjv_updateScene(
                    self.model, data, self.option, None, self.camera,
                    mujoco.mjtCatBit.mjCAT_ALL, self.scene,
                )  # fmt: skip
            else:
                mujoco.mjv_updateCamera(self.model, data, self.camera, self.scene)
            mujoco.mjr_render(self.rect, self.scene, self.context)
            image = np.empty((self.height, self.width, 3), dtype=np.uint8)
            mujoco.mjr_readPixels(image, None, self.rect, self.context)
            images[name] = np.flipud(image)  # OpenGL's rows run bottom-up
        return images

    def close(self) -> None:
        """Free the OpenGL context (the process may make another)."""
        self.context.free()
        self.gl.free()
