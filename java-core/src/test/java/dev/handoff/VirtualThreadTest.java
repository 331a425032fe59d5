// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.lang.reflect.Method;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import org.junit.jupiter.api.Test;

/** 10,000 virtual threads parking in acquireBlocking. JDK 21+ (the bytecode is 17). */
class VirtualThreadTest {

    private static ExecutorService virtualThreadPerTaskExecutor() throws Exception {
        Method m = Executors.class.getMethod("newVirtualThreadPerTaskExecutor");
        return (ExecutorService) m.invoke(null);
    }

    @Test
    void tenThousandVirtualThreadsShareABudget() throws Exception {
        assumeTrue(Runtime.version().feature() >= 21, "virtual threads need JDK 21+");
        Semaphore s = new Semaphore(8);
        AtomicLong inUse = new AtomicLong();
        AtomicLong peak = new AtomicLong();
        LongAdder finished = new LongAdder();
        ExecutorService executor = virtualThreadPerTaskExecutor();
        try {
            for (int i = 0; i < 10_000; i++) {
                long weight = 1 + (i % 3);
                executor.submit(() -> {
                    s.acquireBlocking(weight);
                    try {
                        long now = inUse.addAndGet(weight);
                        peak.accumulateAndGet(now, Math::max);
                        Thread.sleep(0, 10_000); // a virtual thread unmounts here
                    } finally {
                        inUse.addAndGet(-weight);
                        s.release(weight);
                    }
                    finished.increment();
                    return null;
                });
            }
            executor.shutdown();
            assertTrue(executor.awaitTermination(2, TimeUnit.MINUTES), "virtual threads hung: " + s);
        } finally {
            executor.shutdownNow();
        }
        assertEquals(10_000, finished.sum());
        assertTrue(peak.get() <= 8, "peak " + peak.get());
        assertEquals(8, s.availablePermits());
        assertEquals(0, s.queueLength());
    }
}
