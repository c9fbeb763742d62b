"""Stand-ins for the tutorials' downloads: arrays and small files of the
shapes the real datasets have, fewer rows (so a run takes minutes). Both
backends get the same bytes (fixed seeds). See substitutions.py for where
each one replaces a download, and why."""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

import numpy as np

CACHE = Path(os.environ.get("TT_CACHE", "/tmp/tf_tutorials_cache"))
N_TRAIN, N_TEST = 512, 128
FLOWER_CLASSES = ["daisy", "dandelion", "roses", "sunflowers", "tulips"]


def _rng(name):
    return np.random.default_rng(sum(map(ord, name)))


def load_data(name, path=None):
    """keras.datasets.<name>.load_data(): same shapes and dtypes, fewer rows."""
    rng = _rng(name)
    if name in ("mnist", "fashion_mnist"):
        shape, label_shape = (28, 28), ()
    elif name == "cifar10":
        shape, label_shape = (32, 32, 3), (1,)
    else:
        raise ValueError(f"no fake for dataset {name!r}")

    def split(n):
        x = rng.integers(0, 256, size=(n, *shape), dtype=np.uint8)
        y = rng.integers(0, 10, size=(n, *label_shape), dtype=np.uint8)
        return x, y

    return split(N_TRAIN), split(N_TEST)


def _jpeg(path, rng, size=None):
    from PIL import Image
    h, w = size or (int(rng.integers(60, 100)), int(rng.integers(60, 100)))
    arr = rng.integers(0, 256, size=(h, w, 3), dtype=np.uint8)
    Image.fromarray(arr).save(path, format="JPEG")


def _flowers(root, per_class=8):
    rng = _rng("flowers")
    for cls in FLOWER_CLASSES:
        (root / cls).mkdir(parents=True, exist_ok=True)
        for i in range(per_class):
            _jpeg(root / cls / f"{cls}_{i}.jpg", rng)
    (root / "LICENSE.txt").write_text("synthetic\n")


def _creditcard_csv(path, n=4000):
    rng = _rng("creditcard")
    cols = ["Time"] + [f"V{i}" for i in range(1, 29)] + ["Amount", "Class"]
    label = (rng.random(n) < 0.02).astype(int)
    v = rng.normal(size=(n, 28)) + label[:, None] * 1.5
    time = np.sort(rng.uniform(0, 172792, n))
    amount = np.round(rng.exponential(88, n), 2)
    with open(path, "w") as f:
        f.write(",".join(f'"{c}"' for c in cols) + "\n")
        for i in range(n):
            row = (
                [f"{time[i]:.1f}"]
                + [f"{x:.6f}" for x in v[i]]
                + [f"{amount[i]:.2f}", f'"{label[i]}"']
            )
            f.write(",".join(row) + "\n")


def _titanic_csv(path, n=200):
    rng = _rng("titanic")
    with open(path, "w") as f:
        f.write("survived,sex,age,n_siblings_spouses,parch,fare,class,deck,embark_town,alone\n")
        for _ in range(n):
            f.write(",".join([
                str(int(rng.integers(0, 2))), str(rng.choice(["male", "female"])),
                f"{rng.uniform(1, 70):.1f}", str(int(rng.integers(0, 4))),
                str(int(rng.integers(0, 3))), f"{rng.uniform(5, 100):.4f}",
                str(rng.choice(["First", "Second", "Third"])),
                str(rng.choice(["unknown", "A", "B", "C"])),
                str(rng.choice(["Southampton", "Cherbourg", "Queenstown"])),
                str(rng.choice(["y", "n"]))]) + "\n")


def _auto_mpg(path, n=398):
    rng = _rng("auto-mpg")
    with open(path, "w") as f:
        for i in range(n):
            hp = "?" if i % 70 == 5 else f"{rng.uniform(46, 230):.1f}"
            f.write(f"{rng.uniform(9, 46):.1f}   {int(rng.choice([4, 6, 8]))}   "
                    f"{rng.uniform(68, 455):.1f}      {hp}      {rng.uniform(1613, 5140):.1f}"
                    f"      {rng.uniform(8, 25):.1f}   {int(rng.integers(70, 83))}  "
                    f"{int(rng.integers(1, 4))}\t\"car {i}\"\n")


def _ecg(path, n=500):
    rng = _rng("ecg")
    t = np.linspace(0, 6, 140)
    with open(path, "w") as f:
        for _ in range(n):
            label = int(rng.random() < 0.58)
            row = np.sin(t * (2 + label)) + 0.3 * rng.normal(size=140)
            f.write(",".join(f"{x:.6f}" for x in row) + f",{label}.0\n")


def _mnist_npz(path):
    (xtr, ytr), (xte, yte) = load_data("mnist")
    np.savez(path, x_train=xtr, y_train=ytr, x_test=xte, y_test=yte)


def get_file(fname=None, origin=None, untar=False, extract=False, **kwargs):
    """keras.utils.get_file(): builds the named file in TT_CACHE instead of downloading."""
    CACHE.mkdir(parents=True, exist_ok=True)
    key = os.path.basename(origin or fname or "")
    rng = _rng(key)
    if key == "flower_photos.tgz":
        if untar:  # old API: returns the extracted folder named fname
            root = CACHE / (fname or "flower_photos")
            _flowers(root)
            return str(root)
        root = CACHE / "flower_photos_extracted" / "flower_photos"
        _flowers(root)
        (CACHE / "flower_photos.tgz").write_bytes(b"")
        return str(CACHE / "flower_photos.tgz")
    target = CACHE / (fname or key)
    if key.endswith("Red_sunflower.jpg"):
        _jpeg(target, rng, (240, 180))
    elif key == "mnist.npz":
        _mnist_npz(target)
    elif key == "train.csv":
        _titanic_csv(target)
    elif key in ("cowper.txt", "derby.txt", "butler.txt"):
        words = (
            "sing goddess the wrath of achilles son of peleus that brought countless ills".split()
        )
        target.write_text("\n".join(" ".join(rng.choice(words, 8)) for _ in range(300)) + "\n")
    elif key == "creditcard.csv":
        _creditcard_csv(target)
    elif key == "creditcard.zip":
        csv = CACHE / "creditcard.csv"
        _creditcard_csv(csv)
        with zipfile.ZipFile(target, "w") as z:
            z.write(csv, "creditcard.csv")
    elif key == "ecg.csv":
        _ecg(target)
    elif key == "auto-mpg.data":
        _auto_mpg(target)
    elif key.startswith("fsns"):
        target.write_bytes(b"")  # no TFRecord writer without TF: an empty record file
    else:
        raise ValueError(f"no fake for download {origin or fname!r}")
    return str(target)
