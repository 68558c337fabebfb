"""The actor-critic network: an encoder that follows the observation, optional GRU, two heads.

Observations are a uint8 screen ``(C, H, W)`` (a conv encoder), a vector ``(D,)`` of any
numeric dtype (an MLP encoder, for envs such as CartPole), or a dict of at most one screen and
any number of vectors (Doom's ``"screen"`` and ``"measurements"``: health, ammo; the vectors
concatenated, through a small MLP beside the conv encoder, or through the MLP encoder when
there is no screen); :class:`ObsLayout` says where each is. Normalisation lives inside the model (as buffers), so a checkpoint is
all that evaluation needs.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple, cast

import numpy as np
import torch
from gymnasium import spaces
from torch import Tensor, nn

from sf_train.config.schema import ModelConfig
from sf_train.model.distributions import action_distribution
from sf_train.model.gru import unroll
from sf_train.model.int8 import Int8Layers
from sf_train.model.normalize import RunningMeanStd

__all__ = ["ActorCritic", "Obs", "ObsLayout", "PolicyOutput"]

Obs = Tensor | dict[str, Tensor]
"""A batch of observations: a uint8 screen tensor, a vector tensor, or a dict of them (see
:class:`ObsLayout`)."""


class PolicyOutput(NamedTuple):
    """What the network returns for a step or a sequence.

    Attributes:
        logits: Action logits, ``[..., num_logits]``.
        values: State values, ``[...]``.
        rnn_state: GRU state after the last step, ``[B, rnn_size]`` (``[B, 0]`` without GRU).
    """

    logits: Tensor
    values: Tensor
    rnn_state: Tensor


def _is_screen(space: spaces.Space) -> bool:
    return (
        isinstance(space, spaces.Box)
        and space.dtype == "uint8"
        and space.shape is not None
        and len(space.shape) == 3
    )


def _is_vector(space: spaces.Space) -> bool:
    return isinstance(space, spaces.Box) and space.shape is not None and len(space.shape) == 1


def _dict_problem(other: list[str], screens: list[str], vectors: tuple[str, ...]) -> str | None:
    """Why the encoder cannot read a Dict of these keys, or None when it can."""
    if other:
        return f"keys {other} are neither"
    if len(screens) > 1:
        return "it has several screens"
    if not screens and not vectors:
        return "it has none"
    return None


@dataclass(frozen=True)
class ObsLayout:
    """Where a model finds its two inputs in an observation: the screen (a uint8 ``(C, H, W)``
    Box; the conv encoder) and the vector (1-D Boxes, concatenated in key order; an MLP beside
    the conv encoder, or the whole encoder without a screen).

    A Box observation is one or the other; a Dict holds at most one screen (any key) and any
    number of vectors (e.g. Doom's ``"screen"`` and ``"measurements"``).

    Attributes:
        keys: Whether observations are dicts.
        screen: The screen's key (a Box observation: ``"screen"``), or None.
        vector: The vectors' keys, in order (a Box observation: ``("vector",)``).
    """

    keys: bool
    screen: str | None
    vector: tuple[str, ...]

    @classmethod
    def of(cls, space: spaces.Space) -> ObsLayout:
        """The layout of ``space``.

        Raises:
            ValueError: For a space the encoder cannot read, naming the part and the fix.
        """
        if isinstance(space, spaces.Dict):
            screens = [k for k, s in space.spaces.items() if _is_screen(s)]
            vectors = tuple(k for k, s in space.spaces.items() if _is_vector(s))
            other = [k for k in space.spaces if k not in screens and k not in vectors]
            problem = _dict_problem(other, screens, vectors)
            if problem is not None:
                raise ValueError(
                    f"Dict observation space {space}: the encoder reads one uint8 (C, H, W) "
                    f"screen and any number of 1-D Boxes; {problem}: flatten or drop them with "
                    "a gymnasium wrapper"
                )
            return cls(True, screens[0] if screens else None, vectors)
        if _is_vector(space):
            return cls(False, None, ("vector",))
        if _is_screen(space):
            return cls(False, "screen", ())
        raise ValueError(
            f"observation space {space} is neither a uint8 Box of shape (C, H, W) nor a 1-D "
            "Box (nor a Dict of them): make the env emit channel-first uint8 frames or flat "
            "vectors"
        )

    def spaces_of(self, space: spaces.Space) -> tuple[spaces.Box | None, int]:
        """The screen's space (or None) and the vector's width (0 without one)."""
        if not self.keys:
            box = cast(spaces.Box, space)
            return (box, 0) if self.screen else (None, int(box.shape[0]))
        parts = cast(spaces.Dict, space).spaces
        screen = cast(spaces.Box, parts[self.screen]) if self.screen else None
        return screen, sum(int(cast(spaces.Box, parts[k]).shape[0]) for k in self.vector)

    def split(self, obs: Any) -> tuple[Any, Any]:
        """The screen and the vector of a batch of observations (tensors or arrays, any
        leading shape); several vectors are concatenated as float32."""
        if not self.keys:
            return (obs, None) if self.screen else (None, obs)
        if not isinstance(obs, dict):
            raise TypeError("this model was built for Dict observations: pass a dict")
        screen = obs[self.screen] if self.screen else None
        if not self.vector:
            return screen, None
        if len(self.vector) == 1:
            return screen, obs[self.vector[0]]
        parts = [obs[k] for k in self.vector]
        if isinstance(parts[0], Tensor):
            return screen, torch.cat([p.float() for p in parts], dim=-1)
        return screen, np.concatenate([np.asarray(p, np.float32) for p in parts], axis=-1)


def _init_linear(layer: nn.Linear | nn.Conv2d, gain: float) -> None:
    # Orthogonal init; a small actor gain starts the policy near uniform (high entropy).
    nn.init.orthogonal_(layer.weight, gain)
    nn.init.zeros_(cast(Tensor, layer.bias))  # every layer here has one


class ActorCritic(nn.Module):
    """Shared-trunk actor-critic for pixel or vector observations.

    Args:
        observation_space: The single-env observation space: Box uint8 ``(C, H, W)``, a 1-D
            Box, or a Dict of at most one such screen and 1-D Boxes.
        action_space: The single-env action space (Discrete, MultiDiscrete, Tuple of Discrete,
            or a 1-D Box for Gaussian actions).
        cfg: Layer sizes and normalisation options.

    Example:
        >>> obs_space = spaces.Box(0, 255, (1, 36, 64), dtype="uint8")
        >>> model = ActorCritic(obs_space, spaces.Discrete(3), ModelConfig(rnn=True))
        >>> state = model.initial_state(4)
        >>> out = model(torch.zeros(4, 1, 36, 64, dtype=torch.uint8), state)
        >>> out.logits.shape, out.values.shape, out.rnn_state.shape
        (torch.Size([4, 3]), torch.Size([4]), torch.Size([4, 128]))
    """

    def __init__(
        self, observation_space: spaces.Space, action_space: spaces.Space, cfg: ModelConfig
    ) -> None:
        super().__init__()
        self.layout = ObsLayout.of(observation_space)
        screen, vector_size = self.layout.spaces_of(observation_space)
        self.cfg = cfg
        self.action_dist = action_distribution(action_space)
        self.conv: nn.Sequential | None = None
        self.fc: nn.Linear | None = None
        self.screen_norm: RunningMeanStd | None = None
        self.vector_mlp: nn.Sequential | None = None
        self.vector_norm: RunningMeanStd | None = None
        self.measurements_mlp: nn.Linear | None = None
        self.measurements_norm: RunningMeanStd | None = None
        if screen is None:
            features = self._build_vector_encoder(vector_size)
        else:
            features = self._build_screen_encoder(screen.shape)
            if vector_size:
                size = vector_size
                self.measurements_mlp = nn.Linear(size, cfg.measurements_size)
                _init_linear(self.measurements_mlp, math.sqrt(2))
                if cfg.normalize_measurements:
                    self.measurements_norm = RunningMeanStd((size,))
                features += cfg.measurements_size

        self.rnn_size = cfg.rnn_size if cfg.rnn else 0
        self.rnn = nn.GRUCell(features, cfg.rnn_size) if cfg.rnn else None
        core_out = cfg.rnn_size if cfg.rnn else features
        self.actor = nn.Linear(core_out, self.action_dist.num_logits)
        self.critic = nn.Linear(core_out, 1)
        _init_linear(self.actor, 0.01)
        _init_linear(self.critic, 1.0)
        # eps far below any return variance: a scenario paying 0.01 per kill has variances ~1e-4.
        self.value_norm = RunningMeanStd((), eps=1e-10) if cfg.normalize_values else None
        self.int8: Int8Layers | None = None
        """An int8 acting copy's FC layer and GRU (see :meth:`acting_copy`); None in float.
        Not part of the state dict."""

    def _build_screen_encoder(self, shape: tuple[int, ...]) -> int:
        """The conv stack and FC layer over screens of ``shape``; returns the feature width."""
        cfg = self.cfg
        channels = shape[0]
        layers: list[nn.Module] = []
        for out_channels, k, s in zip(
            cfg.conv_channels, cfg.conv_kernels, cfg.conv_strides, strict=True
        ):
            conv = nn.Conv2d(channels, out_channels, k, s)
            _init_linear(conv, math.sqrt(2))
            layers += [conv, nn.ELU()]
            channels = out_channels
        self.conv = nn.Sequential(*layers, nn.Flatten())
        try:
            with torch.no_grad():
                conv_out = self.conv(torch.zeros(1, *shape)).shape[1]
        except RuntimeError as e:
            raise ValueError(
                f"the conv stack (kernels {cfg.conv_kernels}, strides {cfg.conv_strides}) does "
                f"not fit a {tuple(shape)} screen: use smaller kernels/strides, fewer "
                "layers or larger observations"
            ) from e
        self.fc = nn.Linear(conv_out, cfg.fc_size)
        _init_linear(self.fc, math.sqrt(2))
        norm_shape = {"running": (), "per_pixel": tuple(shape)}.get(cfg.screen_norm)
        self.screen_norm = None if norm_shape is None else RunningMeanStd(norm_shape)
        return cfg.fc_size

    def _build_vector_encoder(self, size: int) -> int:
        """The MLP over vector observations of ``size`` entries; returns the feature width."""
        cfg = self.cfg
        layers: list[nn.Module] = []
        width = size
        for out in cfg.mlp_sizes:
            linear = nn.Linear(width, out)
            _init_linear(linear, math.sqrt(2))
            layers += [linear, nn.Tanh()]
            width = out
        self.vector_mlp = nn.Sequential(*layers)
        if cfg.normalize_measurements:
            self.vector_norm = RunningMeanStd((size,))
        return width

    def initial_state(self, batch_size: int, device: torch.device | str = "cpu") -> Tensor:
        """Zero recurrent state, ``[batch_size, rnn_size]`` (``[batch_size, 0]`` without GRU)."""
        return torch.zeros(batch_size, self.rnn_size, device=device)

    @property
    def dict_obs(self) -> bool:
        """Whether observations are dicts."""
        return self.layout.keys

    def _split(self, obs: Obs) -> tuple[Tensor | None, Tensor | None]:
        """The screen and the vector (measurements, or the whole observation) of ``obs``."""
        if not self.layout.keys and isinstance(obs, dict):
            raise TypeError("this model was built for a Box observation: pass one tensor")
        return cast(tuple[Tensor | None, Tensor | None], self.layout.split(obs))

    @torch.no_grad()
    def update_normalizers(self, obs: Obs) -> None:
        """Adds a batch of observations (any leading shape) to the running statistics."""
        screen, vector = self._split(obs)
        if self.screen_norm is not None:
            self.screen_norm.update(cast(Tensor, screen))  # a screen model's
        if vector is not None:
            norm = self.vector_norm if self.vector_mlp is not None else self.measurements_norm
            if norm is not None:
                norm.update(vector.float())

    def encode(self, obs: Obs) -> Tensor:
        """Features before the core, ``[N, features]``, for a flat batch of observations."""
        screen, vector = self._split(obs)
        dtype = self.actor.weight.dtype  # bfloat16 in a sampler's copy (see acting_copy)
        if self.vector_mlp is not None:
            v = cast(Tensor, vector).float()
            if self.vector_norm is not None:
                v = self.vector_norm(v)
            return self.vector_mlp(v.to(dtype))
        screen = cast(Tensor, screen)
        if self.screen_norm is not None:
            x = self.screen_norm(screen)
        else:
            x = screen.float() * (1.0 / 255.0)
        fc = cast(nn.Linear, self.fc) if self.int8 is None else self.int8.fc
        x = nn.functional.elu(fc(cast(nn.Sequential, self.conv)(x.to(dtype))))
        if self.measurements_mlp is not None:
            m = cast(Tensor, vector).float()  # a measurements model gets them
            if self.measurements_norm is not None:
                m = self.measurements_norm(m)
            x = torch.cat([x, nn.functional.elu(self.measurements_mlp(m.to(dtype)))], dim=-1)
        return x

    def _heads(self, core: Tensor) -> tuple[Tensor, Tensor]:
        values = self.critic(core).squeeze(-1)
        if self.value_norm is not None:
            values = self.value_norm.denormalize(values.float())
        return self.actor(core), values

    @property
    def value_std(self) -> float:
        """The unit the critic learns in: the running std of its targets (1 without
        ``normalize_values``)."""
        return 1.0 if self.value_norm is None else float(self.value_norm.std)

    def forward(self, obs: Obs, rnn_state: Tensor) -> PolicyOutput:
        """One step for a batch of envs (inference): obs ``[B, ...]``, state ``[B, H]``."""
        x = self.encode(obs)
        if self.rnn is not None:
            cell = self.rnn if self.int8 is None else self.int8.cell
            x = cell(x, rnn_state.to(x.dtype))
            rnn_state = x.float()
        logits, values = self._heads(x)
        return PolicyOutput(logits.float(), values.float(), rnn_state)

    def acting_copy(
        self, precision: Literal["float32", "bfloat16", "int8"] = "float32"
    ) -> ActorCritic:
        """A copy to act with; in 'bfloat16' its weights (not its normalisers) are bfloat16,
        in 'int8' its FC layer and GRU multiply with int8 copies of their weights
        (:attr:`int8`; call :meth:`requantize` after changing them). :meth:`forward` still
        takes and returns float32 states, logits and values."""
        copy_ = copy.deepcopy(self)
        if precision == "bfloat16":
            for param in copy_.parameters():
                param.data = param.data.to(torch.bfloat16)
        elif precision == "int8":
            copy_.int8 = copy_.pack_int8()
        return copy_

    def pack_int8(self) -> Int8Layers:
        """This model's FC layer and GRU as int8 layers (see :mod:`sf_train.model.int8`).

        Raises:
            ValueError: For a model of vector observations, which has no FC layer to quantize.
        """
        if self.fc is None:
            raise ValueError(
                "int8 acting quantizes the FC layer of a screen model; this model "
                "encodes vectors: use precision float32 or bfloat16"
            )
        return Int8Layers(self.fc, self.rnn)

    def requantize(self) -> None:
        """Packs an int8 acting copy's int8 weights anew from its float ones (no-op for any
        other model); loading a state dict does it by itself."""
        if self.int8 is not None:
            self.int8 = self.pack_int8()

    def load_state_dict(
        self, state_dict: Mapping[str, Any], strict: bool = True, assign: bool = False
    ) -> Any:
        result = super().load_state_dict(state_dict, strict=strict, assign=assign)
        self.requantize()
        return result

    def forward_sequence(self, obs: Obs, rnn_state: Tensor, resets: Tensor) -> PolicyOutput:
        """A ``[T, B]`` batch of trajectories (training), encoded in one pass.

        Args:
            obs: Observations with leading shape ``[T, B]``.
            rnn_state: State before the first step, ``[B, H]``.
            resets: Bool ``[T, B]``; true where a new episode starts at step ``t``, which
                zeroes the GRU state before that step.

        Returns:
            Logits ``[T, B, num_logits]``, values ``[T, B]`` and the final state ``[B, H]``.
        """
        screen, vector = self._split(obs)
        T, B = (screen if screen is not None else cast(Tensor, vector)).shape[:2]
        # Channels-last screens make the convolutions of a training batch about a tenth faster
        # on CPU (oneDNN); the order of the features after them is unchanged.
        flat: Obs
        if self.layout.keys:
            flat = {k: v.flatten(0, 1) for k, v in cast(dict[str, Tensor], obs).items()}
            if screen is not None:
                key = cast(str, self.layout.screen)
                flat[key] = flat[key].contiguous(memory_format=torch.channels_last)
        elif screen is None:
            flat = cast(Tensor, vector).flatten(0, 1)
        else:
            flat = screen.flatten(0, 1).contiguous(memory_format=torch.channels_last)
        x = self.encode(flat).view(T, B, -1)
        if self.rnn is not None:
            keep = (~resets).to(x.dtype).unsqueeze(-1)
            x, rnn_state = unroll(self.rnn, x, rnn_state, keep)
        logits, values = self._heads(x)
        return PolicyOutput(logits, values, rnn_state)
