"""An independent Lion for the parity tests (torch has none): a numpy transcription of Megatron's
--optimizer lion (the emerging-optimizers Lion with decoupled weight decay), stepping torch parameters in
place. Per element, with g the (clipped) gradient:
    p <- p - lr * wd * p
    u  = sign(beta1 * m + (1 - beta1) * g)
    m <- m + (1 - beta2) * (g - m)
    p <- p - lr * u
"""
import numpy as np


class Lion:
    def __init__(self, params, lr, weight_decay, betas):
        self.params = list(params)
        self.lr, self.wd = np.float32(lr), np.float32(weight_decay)
        self.b1, self.b2 = np.float32(betas[0]), np.float32(betas[1])
        self.exp_avg = [np.zeros(tuple(p.shape), dtype=np.float32) for p in self.params]

    def step(self):
        one = np.float32(1)
        for p, m in zip(self.params, self.exp_avg):
            g = p.grad.detach().numpy().astype(np.float32)
            x = p.data.numpy()  # shares memory with the parameter: updated in place
            x += (-self.wd * self.lr) * x
            u = np.sign(self.b1 * m + (one - self.b1) * g).astype(np.float32)
            m += (one - self.b2) * (g - m)
            x += (-self.lr) * u
