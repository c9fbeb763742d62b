# The ideas of TensorFlow's "Training checkpoints" guide: a Checkpoint of a
# step counter, an optimizer and a model, a CheckpointManager keeping the last
# three, restore into fresh objects (training then continues identically), and
# tf.summary scalars for TensorBoard.
import os
import tempfile

import numpy as np

import loopax.tf as tf

workdir = globals().get("WORKDIR") or tempfile.mkdtemp()


class Net(tf.keras.Model):
    def __init__(self):
        super().__init__()
        self.l1 = tf.keras.layers.Dense(3, kernel_initializer="ones")

    def call(self, x):
        return self.l1(x)


inputs = tf.constant(np.linspace(-1, 1, 20, dtype=np.float32).reshape(10, 2))
targets = tf.constant(np.linspace(0, 2, 30, dtype=np.float32).reshape(10, 3))


def train_step(net, optimizer):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.abs(net(inputs) - targets))
    variables = net.trainable_variables
    optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables))
    return loss


def make():
    net = Net()
    net(inputs)   # built before a restore: its variables exist
    optimizer = tf.keras.optimizers.Adam(0.1)
    optimizer.build(net.trainable_variables)
    ckpt = tf.train.Checkpoint(step=tf.Variable(1), optimizer=optimizer, net=net)
    return net, optimizer, ckpt


net, optimizer, ckpt = make()
manager = tf.train.CheckpointManager(ckpt, os.path.join(workdir, "tf_ckpts"), max_to_keep=3)
print("fresh_start:", int(manager.latest_checkpoint is None))
ckpt.restore(manager.latest_checkpoint)
writer = tf.summary.create_file_writer(os.path.join(workdir, "logs"))
with writer.as_default():
    for _ in range(49):   # steps 2..50; saves at 10, 20, ..., 50
        loss = train_step(net, optimizer)
        ckpt.step.assign_add(1)
        if int(ckpt.step) % 10 == 0:
            manager.save()
            tf.summary.scalar("loss", loss, step=int(ckpt.step))
print("kept:", [int(os.path.basename(p).split("-")[1]) for p in manager.checkpoints])
print("latest_matches:", int(tf.train.latest_checkpoint(manager.directory)
                             == manager.latest_checkpoint))
saved_kernel = net.l1.kernel.numpy()
saved_step = int(ckpt.step)
for _ in range(3):   # moves on after the last save
    train_step(net, optimizer)
    ckpt.step.assign_add(1)

net2, optimizer2, ckpt2 = make()
status = ckpt2.restore(tf.train.latest_checkpoint(manager.directory))
status.assert_consumed()
print("restored_step:", int(ckpt2.step), saved_step)
print("restored_kernel_diff:", float(np.max(np.abs(net2.l1.kernel.numpy() - saved_kernel))))
print("restored_iterations:", int(optimizer2.iterations))
ckpt.restore(manager.latest_checkpoint)

# Delayed restoration: a model never called and an optimizer never built take
# the saved values when their variables are created (first call, first apply).
net3 = Net()
optimizer3 = tf.keras.optimizers.Adam(0.1)
ckpt3 = tf.train.Checkpoint(step=tf.Variable(1), optimizer=optimizer3, net=net3)
status3 = ckpt3.restore(tf.train.latest_checkpoint(manager.directory))
print("deferred_before_build:", len([k for k in status3.unused_keys if k.startswith("net/")]))
print("deferred_step:", int(ckpt3.step))
continued, deferred = [], []
for _ in range(3):
    reference = float(train_step(net2, optimizer2))
    continued.append(float(train_step(net, optimizer)) - reference)
    deferred.append(float(train_step(net3, optimizer3)) - reference)
print("continued:", continued)
print("continued_deferred:", deferred)
status3.assert_consumed()
print("deferred_consumed:", len(status3.unused_keys))
