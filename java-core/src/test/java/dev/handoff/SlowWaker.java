// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/** A waker whose claim blocks until {@code open}, then takes the grant or declines it. */
final class SlowWaker implements Waker {
    final CountDownLatch inClaim = new CountDownLatch(1);
    final CountDownLatch open = new CountDownLatch(1);
    final boolean takes;
    final AtomicInteger wakes = new AtomicInteger();

    SlowWaker(boolean takes) {
        this.takes = takes;
    }

    @Override
    public boolean claim() {
        inClaim.countDown();
        try {
            return open.await(60, TimeUnit.SECONDS) && takes;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    @Override
    public void wake() {
        wakes.incrementAndGet();
    }
}
