"""A progress bar over finished requests: tqdm when installed, else nothing."""
from __future__ import annotations


class _Null:
    def update(self, n: int = 1) -> None:
        pass

    def close(self) -> None:
        pass


def progress(total: int, desc: str, enabled: bool):
    if not enabled or total <= 1:
        return _Null()
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return _Null()
    return tqdm(total=total, desc=desc, dynamic_ncols=True)
