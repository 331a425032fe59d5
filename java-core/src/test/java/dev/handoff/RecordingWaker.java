// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

/** A test waker that counts its calls, optionally records its name in a shared log. */
final class RecordingWaker implements Waker {
    final AtomicInteger claims = new AtomicInteger();
    final AtomicInteger wakes = new AtomicInteger();
    volatile boolean declineClaim;
    volatile Thread wokenOn;
    private final String name;
    private final List<String> log;

    RecordingWaker() {
        this(null, null);
    }

    RecordingWaker(String name, List<String> log) {
        this.name = name;
        this.log = log;
    }

    @Override
    public boolean claim() {
        claims.incrementAndGet();
        return !declineClaim;
    }

    @Override
    public void wake() {
        wokenOn = Thread.currentThread();
        wakes.incrementAndGet();
        if (log != null) {
            synchronized (log) {
                log.add(name);
            }
        }
    }
}
