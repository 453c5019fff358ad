"""Figures of plant results; matplotlib is imported here only, when a plot is asked for."""
import math
import os

import numpy as np

from ..errors import PlotError


def _pyplot():
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise PlotError("plotting needs matplotlib (pip install matplotlib)") from None
    return plt


def _grid(count):
    columns = 1 if count <= 3 else 2 if count <= 8 else 3
    return math.ceil(count / columns), columns


def plot_file_name(path):
    """The file a plot asked for at ``path`` is written to: a name without extension gets .png."""
    path = os.fspath(path)
    return path if os.path.splitext(path)[1] else path + ".png"


def _save(figure, path, plt):
    path = plot_file_name(path)
    try:
        figure.savefig(path, dpi=110)
    except OSError as error:
        raise PlotError(f"cannot write plot {str(path)!r}: {error.strerror}") from None
    finally:
        plt.close(figure)
    return path


def plot_torques(report, path, title=None, units=None):
    """One panel per joint: torque over time, +-effort limit dashed, violations shaded.

    ``units``: per joint, e.g. 'N m' (revolute) or 'N' (prismatic); default 'N m'.
    """
    plt = _pyplot()
    count = len(report.joint_names)
    rows, columns = _grid(count)
    figure, axes = plt.subplots(rows, columns, figsize=(6.0 * columns, 2.1 * rows + 0.8),
                                sharex=True, squeeze=False)
    for j, name in enumerate(report.joint_names):
        ax = axes[j // columns][j % columns]
        tau = report.torques[:, j]
        ax.plot(report.time, tau, color="tab:blue", linewidth=1.2, label="torque")
        limit = report.effort_limits[j]
        if np.isfinite(limit):
            ax.axhline(limit, color="tab:red", linestyle="--", linewidth=1.0, label="effort limit")
            ax.axhline(-limit, color="tab:red", linestyle="--", linewidth=1.0)
            over = np.abs(tau) > limit
            if over.any():
                ax.fill_between(report.time, -limit, limit, where=over, color="tab:red", alpha=0.15,
                                label="over limit")
            ratio = f"peak {report.ratio[j] * 100:.0f}% of limit"
        else:
            ratio = "no effort limit"
        ax.set_title(f"{name}  ({ratio})", fontsize=9)
        ax.set_ylabel(f"torque [{units[j] if units else 'N m'}]", fontsize=8)
        ax.tick_params(labelsize=8)
        ax.grid(True, alpha=0.3)
    for k in range(count, rows * columns):
        axes[k // columns][k % columns].set_visible(False)
    for column in range(columns):
        # The lowest visible panel of each column carries the time axis.
        last = max(k for k in range(count) if k % columns == column) if column < count else None
        if last is not None:
            ax = axes[last // columns][column]
            ax.xaxis.set_tick_params(labelbottom=True)
            ax.set_xlabel("time [s]", fontsize=8)
    handles, labels = axes[0][0].get_legend_handles_labels()
    figure.legend(handles, labels, loc="upper right", fontsize=8)
    figure.suptitle(title or "Joint torques along the path", fontsize=11)
    figure.tight_layout(rect=(0, 0, 0.88 if columns == 1 else 0.93, 0.97))
    return _save(figure, path, plt)


def plot_deflection(result, path, title=None):
    """Translation (mm) and rotation (mrad) of the end-effector over time, per axis and norm."""
    plt = _pyplot()
    figure, (top, bottom) = plt.subplots(2, 1, figsize=(7.5, 5.5), sharex=True)
    for axis, label in enumerate("xyz"):
        top.plot(result.time, 1e3 * result.deflection[:, axis], linewidth=1.0, label=f"d{label}")
        bottom.plot(result.time, 1e3 * result.deflection[:, 3 + axis], linewidth=1.0,
                    label=f"rot {label}")
    top.plot(result.time, 1e3 * result.translation, color="black", linewidth=1.5, label="|dp|")
    bottom.plot(result.time, 1e3 * result.rotation, color="black", linewidth=1.5, label="|dtheta|")
    top.set_ylabel("translation [mm]")
    bottom.set_ylabel("rotation [mrad]")
    bottom.set_xlabel("time [s]")
    for ax in (top, bottom):
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5))
    figure.suptitle(title or f"Deflection of {result.frame}", fontsize=11)
    figure.tight_layout()
    return _save(figure, path, plt)


def plot_criteria(result, path, title=None):
    """The four criteria over time, one panel each."""
    plt = _pyplot()
    figure, axes = plt.subplots(4, 1, figsize=(7.5, 8.0), sharex=True)
    labels = {"torque_utilization": "torque utilization", "manipulability": "manipulability",
              "dynamic_manipulability": "dynamic manipulability",
              "inertia_condition": "cond(task-space inertia)"}
    for ax, name in zip(axes, result.NAMES):
        values = getattr(result, name)
        ax.plot(result.time, np.where(np.isfinite(values), values, np.nan), linewidth=1.2)
        ax.set_ylabel(labels[name], fontsize=8)
        ax.grid(True, alpha=0.3)
    axes[0].axhline(1.0, color="tab:red", linestyle="--", linewidth=1.0)
    axes[-1].set_xlabel("time [s]")
    figure.suptitle(title or f"Criteria at {result.frame} ({result.part})", fontsize=11)
    figure.tight_layout()
    return _save(figure, path, plt)
