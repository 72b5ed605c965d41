"""The one shape every loader returns: :class:`ImageSet`, uint8 images ``(N, 3, H, W)``, integer labels and the class
names, checked when made."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ftcl_core.arguments import described


@dataclass
class ImageSet:
    """Images as uint8 ``(N, 3, H, W)`` with int64 labels ``(N,)`` and the class names."""

    images: torch.Tensor
    labels: torch.Tensor
    classes: tuple[str, ...]

    def __post_init__(self) -> None:
        if not isinstance(self.images, torch.Tensor) or not isinstance(self.labels, torch.Tensor):
            raise TypeError(f"ImageSet takes torch tensors, got images {described(self.images)} and labels "
                            f"{described(self.labels)}: wrap them with torch.as_tensor(x).")
        if self.images.dtype != torch.uint8 or self.images.dim() != 4 or self.images.shape[1] != 3:
            raise ValueError(
                f"ImageSet.images must be uint8 (N, 3, H, W); got {tuple(self.images.shape)} "
                f"{self.images.dtype}. Convert with (x * 255).round().to(torch.uint8)."
            )
        if len(self.images) != len(self.labels):
            raise ValueError(f"{len(self.images)} images but {len(self.labels)} labels.")
        if len(self.images) == 0:
            raise ValueError("ImageSet is empty: the data source holds no images.")
        if not (isinstance(self.classes, (tuple, list)) and self.classes and all(isinstance(c, str) for c in self.classes)
                and len(set(self.classes)) == len(self.classes)):
            raise ValueError(f"ImageSet.classes must name each class once, got {self.classes!r}.")
        if self.labels.dim() != 1 or self.labels.is_floating_point() or self.labels.dtype == torch.bool:
            raise ValueError(f"ImageSet.labels must be class indices 0 .. {len(self.classes) - 1}, one integer an image, "
                             f"got {described(self.labels)}.")
        if (bad := self.labels[(self.labels < 0) | (self.labels >= len(self.classes))]).numel():
            raise ValueError(f"ImageSet: a label {int(bad[0])} lies outside its {len(self.classes)} classes (0 to "
                             f"{len(self.classes) - 1}): a damaged labels file, or another set's. Replace it.")

    def __len__(self) -> int:
        return len(self.images)
