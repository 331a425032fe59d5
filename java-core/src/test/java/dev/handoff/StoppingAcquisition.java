// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A subclass node that stops its own start at a chosen step: the first time the core asks its
 * minimum from inside the method {@code step} (for example {@code "enqueue"}, before it is queued,
 * or {@code "tryAppend"}, between the reads of the tail and the capacity and the CAS), it counts
 * down {@link #reached} and waits for {@link #go}. For deterministic interleavings without sleeps.
 */
final class StoppingAcquisition extends Acquisition {
    final CountDownLatch reached = new CountDownLatch(1);
    final CountDownLatch go = new CountDownLatch(1);
    final AtomicInteger wakes = new AtomicInteger();
    private final String step;

    StoppingAcquisition(String step) {
        this.step = step;
    }

    @Override
    long minimum() {
        if (reached.getCount() > 0 && calledFrom(step)) {
            reached.countDown();
            try {
                go.await();
            } catch (InterruptedException e) {
                throw new AssertionError(e);
            }
        }
        return super.minimum();
    }

    @Override
    protected void wake() {
        wakes.incrementAndGet();
    }

    private static boolean calledFrom(String method) {
        return StackWalker.getInstance()
                .walk(frames -> frames.anyMatch(f -> f.getMethodName().equals(method)));
    }
}
