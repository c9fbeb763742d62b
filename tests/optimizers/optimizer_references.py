"""Hand-written NumPy (float64) recurrences of Keras 3's optimizer updates.

Each `*_step(var, g, slots, t, lr, **hp)` returns the new variable value; `t`
is the 1-based step and `slots` a dict the function keeps its state in.
"""

import numpy as np


def sgd_step(var, g, s, t, lr, momentum=0.0, nesterov=False):
    if not momentum:
        return var - lr * g
    m = s.get("m", np.zeros_like(var))
    m = momentum * m - lr * g
    s["m"] = m
    return var + (momentum * m - lr * g if nesterov else m)


def adam_step(var, g, s, t, lr, beta_1=0.9, beta_2=0.999, epsilon=1e-7, amsgrad=False):
    m = s.get("m", np.zeros_like(var)) + (g - s.get("m", np.zeros_like(var))) * (1 - beta_1)
    v = s.get("v", np.zeros_like(var)) + (g * g - s.get("v", np.zeros_like(var))) * (1 - beta_2)
    s["m"], s["v"] = m, v
    if amsgrad:
        v = s["vhat"] = np.maximum(s.get("vhat", np.zeros_like(var)), v)
    alpha = lr * np.sqrt(1 - beta_2 ** t) / (1 - beta_1 ** t)
    return var - m * alpha / (np.sqrt(v) + epsilon)


def adamax_step(var, g, s, t, lr, beta_1=0.9, beta_2=0.999, epsilon=1e-7):
    m = s.get("m", np.zeros_like(var))
    m = m + (g - m) * (1 - beta_1)
    u = np.maximum(beta_2 * s.get("u", np.zeros_like(var)), np.abs(g))
    s["m"], s["u"] = m, u
    return var - lr * m / ((1 - beta_1 ** t) * (u + epsilon))


def nadam_step(var, g, s, t, lr, beta_1=0.9, beta_2=0.999, epsilon=1e-7):
    # The product of the momentum schedule is shared by all variables and
    # advanced once per step: the caller keeps it in s["shared"].
    u_t = beta_1 * (1 - 0.5 * 0.96 ** t)
    u_next = beta_1 * (1 - 0.5 * 0.96 ** (t + 1))
    u_product = s["shared"]["u_product_at"][t]
    m = s.get("m", np.zeros_like(var))
    v = s.get("v", np.zeros_like(var))
    m = m + (g - m) * (1 - beta_1)
    v = v + (g * g - v) * (1 - beta_2)
    s["m"], s["v"] = m, v
    m_hat = u_next * m / (1 - u_product * u_next) + (1 - u_t) * g / (1 - u_product)
    v_hat = v / (1 - beta_2 ** t)
    return var - m_hat * lr / (np.sqrt(v_hat) + epsilon)


def nadam_shared(steps, beta_1=0.9, **_):
    prod, at = 1.0, {}
    for t in range(1, steps + 1):
        prod *= beta_1 * (1 - 0.5 * 0.96 ** t)
        at[t] = prod
    return {"u_product_at": at}


def rmsprop_step(var, g, s, t, lr, rho=0.9, momentum=0.0, epsilon=1e-7, centered=False):
    v = rho * s.get("v", np.zeros_like(var)) + (1 - rho) * g * g
    s["v"] = v
    if centered:
        a = rho * s.get("a", np.zeros_like(var)) + (1 - rho) * g
        s["a"] = a
        denominator = v - a * a + epsilon
    else:
        denominator = v + epsilon
    increment = lr * g / np.sqrt(denominator)
    if momentum:
        s["mom"] = momentum * s.get("mom", np.zeros_like(var)) + increment
        return var - s["mom"]
    return var - increment


def adagrad_step(var, g, s, t, lr, initial_accumulator_value=0.1, epsilon=1e-7):
    acc = s.get("acc", np.full_like(var, initial_accumulator_value)) + g * g
    s["acc"] = acc
    return var - lr * g / np.sqrt(acc + epsilon)


def lion_step(var, g, s, t, lr, beta_1=0.9, beta_2=0.99):
    m = s.get("m", np.zeros_like(var))
    new_var = var - lr * np.sign(m * beta_1 + g * (1 - beta_1))
    s["m"] = m * beta_2 + g * (1 - beta_2)
    return new_var


def adafactor_step(var, g, s, t, lr, beta_2_decay=-0.8, epsilon_1=1e-30, epsilon_2=1e-3,
                   clip_threshold=1.0, relative_step=True):
    rms = lambda x: np.sqrt(np.mean(np.square(x)))
    rho = min(lr, 1 / np.sqrt(t))
    alpha = max(epsilon_2, rms(var)) * rho
    g2 = g * g + epsilon_1
    beta = 1 - t ** beta_2_decay
    if var.ndim >= 2:
        r = beta * s.get("r", np.zeros(var.shape[:-1])) + (1 - beta) * g2.mean(-1)
        c = beta * s.get("c", np.zeros(var.shape[:-2] + var.shape[-1:])) + (1 - beta) * g2.mean(-2)
        s["r"], s["c"] = r, c
        v = (r / r.mean(-1, keepdims=True))[..., None] * c[..., None, :]
    else:
        v = beta * s.get("v", np.zeros_like(var)) + (1 - beta) * g2
        s["v"] = v
    u = g / np.sqrt(v)
    u = u / max(1.0, rms(u) / clip_threshold)
    return var - alpha * u


def run(step_fn, init, grads_seq, lr, weight_decay=None, shared=None, **hp):
    """Applies `step_fn` to every variable for each step's gradients."""
    values = [np.asarray(v, np.float64) for v in init]
    slots = [{"shared": shared} for _ in values]
    for t, grads in enumerate(grads_seq, start=1):
        rate = lr(t - 1) if callable(lr) else lr
        for i, g in enumerate(grads):
            if weight_decay:
                values[i] = values[i] - values[i] * weight_decay * rate
            values[i] = step_fn(values[i], np.asarray(g, np.float64), slots[i], t, rate, **hp)
    return values


def adadelta_step(var, g, s, t, lr, rho=0.95, epsilon=1e-7):
    rms = lambda x: np.sqrt(x + epsilon)
    acc_g = rho * s.get("acc_g", np.zeros_like(var)) + (1 - rho) * g * g
    acc_dx = s.get("acc_dx", np.zeros_like(var))
    delta = -rms(acc_dx) * g / rms(acc_g)
    s["acc_g"], s["acc_dx"] = acc_g, rho * acc_dx + (1 - rho) * delta * delta
    return var + lr * delta


def lamb_step(var, g, s, t, lr, beta_1=0.9, beta_2=0.999, epsilon=1e-7):
    m = s.get("m", np.zeros_like(var))
    v = s.get("v", np.zeros_like(var))
    m = m + (g - m) * (1 - beta_1)
    v = v + (g * g - v) * (1 - beta_2)
    s["m"], s["v"] = m, v
    update = (m / (1 - beta_1 ** t)) / (np.sqrt(v / (1 - beta_2 ** t)) + epsilon)
    w_norm, u_norm = np.linalg.norm(var), np.linalg.norm(update)
    ratio = w_norm / u_norm if w_norm > 0 and u_norm > 0 else 1.0
    return var - lr * ratio * update
