"""Room reserved after a KV cache's prefix, so that appending a decoding step
writes in place instead of copying the whole cache.

transformers' `DynamicLayer.update` concatenates: every step of the packed
shared-prefix layout (`BatchedDecoding`) copied each layer's 16.6K-token
prefix again to append a few tokens, a tenth of the larger benchmark model's
decoding time. `reserve_room` gives each layer a buffer long enough for the
prefix and every token a batch will add; the layer's keys and values stay
views of it, so attention reads them exactly as before, and cropping back to
the prefix keeps the buffer for the next batch. Where the room runs out, or a
batch operation replaced the tensors, the layer grows by concatenation as
transformers' own does.
"""

from __future__ import annotations

from typing import Any

from transformers.cache_utils import DynamicLayer


class ReservedLayer(DynamicLayer):
    """A `DynamicLayer` whose keys and values are the first positions of a
    longer buffer (`key_room`, `value_room`)."""

    keys: Any  # views of the rooms while in them (set by transformers' layer)
    values: Any
    key_room: Any = None
    value_room: Any = None

    def _in_room(self) -> bool:
        """Whether the current keys and values are still the start of the room
        (a batch operation or a concatenation makes new tensors)."""
        return (
            self.key_room is not None
            and self.keys.data_ptr() == self.key_room.data_ptr()
            and self.values.data_ptr() == self.value_room.data_ptr()
            and self.keys.shape[:-2] == self.key_room.shape[:-2]
        )

    def update(self, key_states, value_states, *args, **kwargs) -> tuple[Any, Any]:
        if not self.is_initialized or not self._in_room():
            return super().update(key_states, value_states, *args, **kwargs)
        length = self.keys.shape[-2]
        end = length + key_states.shape[-2]
        if end > self.key_room.shape[-2]:  # no room left: grow as transformers does
            self.key_room = self.value_room = None
            return super().update(key_states, value_states, *args, **kwargs)
        self.key_room[..., length:end, :].copy_(key_states)
        self.value_room[..., length:end, :].copy_(value_states)
        self.keys = self.key_room[..., :end, :]
        self.values = self.value_room[..., :end, :]
        return self.keys, self.values


def reserve_room(cache, total_tokens: int) -> bool:
    """Make every layer of `cache` (a DynamicCache of full-attention layers)
    hold up to `total_tokens` positions without copying what it holds. A layer
    whose room is already long enough is left alone. Returns False, changing
    nothing, for a cache of another kind."""
    layers = getattr(cache, "layers", None)
    if not layers or any(type(layer) not in (DynamicLayer, ReservedLayer) for layer in layers):
        return False
    for layer in layers:
        if not layer.is_initialized:
            continue
        reserved = type(layer) is ReservedLayer and layer._in_room()
        if reserved and layer.key_room.shape[-2] >= total_tokens:
            continue
        length = layer.keys.shape[-2]
        size = max(total_tokens, length)
        key_room = layer.keys.new_empty((*layer.keys.shape[:-2], size, layer.keys.shape[-1]))
        value_room = layer.values.new_empty(
            (*layer.values.shape[:-2], size, layer.values.shape[-1])
        )
        key_room[..., :length, :].copy_(layer.keys)
        value_room[..., :length, :].copy_(layer.values)
        layer.__class__ = ReservedLayer
        layer.key_room, layer.value_room = key_room, value_room
        layer.keys = key_room[..., :length, :]
        layer.values = value_room[..., :length, :]
    return True
