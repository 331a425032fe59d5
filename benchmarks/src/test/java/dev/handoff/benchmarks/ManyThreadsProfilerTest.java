// SPDX-License-Identifier: Apache-2.0
package dev.handoff.benchmarks;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The lock storm's bookkeeping: the latency histogram and finding a JDK with virtual threads. No timing. */
class ManyThreadsProfilerTest {
    @Test
    void everyLatencyFallsInABucketThatHoldsIt() {
        int previous = -1;
        for (long v = 0; v < 1 << 20; v++) {
            int b = ManyThreadsProfiler.bucket(v);
            assertTrue(b == previous || b == previous + 1, v + ": buckets skipped");
            previous = b;
            assertTrue(v <= ManyThreadsProfiler.highestIn(b), v + " above its bucket's highest value");
            assertTrue(b == 0 || v > ManyThreadsProfiler.highestIn(b - 1), v + " belongs to the bucket below");
        }
        for (long v : new long[] {1L << 30, 3_000_000_000L, (1L << 41) - 1}) {
            int b = ManyThreadsProfiler.bucket(v);
            assertTrue(
                    v <= ManyThreadsProfiler.highestIn(b) && v > ManyThreadsProfiler.highestIn(b - 1),
                    Long.toString(v));
            // Within an eighth above the true value, as the Javadoc says.
            assertTrue(ManyThreadsProfiler.highestIn(b) - v < v / 8 + 1, Long.toString(v));
        }
        assertEquals(ManyThreadsProfiler.BUCKETS - 1, ManyThreadsProfiler.bucket(Long.MAX_VALUE));
        assertEquals(0, ManyThreadsProfiler.bucket(-5), "a clock that went back counts as 0");
        assertEquals(15, ManyThreadsProfiler.highestIn(ManyThreadsProfiler.bucket(15)), "exact below 16 ns");
    }

    @Test
    void theQuantileIsTheHighestValueOfItsBucket() {
        long[] histogram = new long[ManyThreadsProfiler.BUCKETS];
        for (int i = 0; i < 99; i++) {
            histogram[ManyThreadsProfiler.bucket(100)]++;
        }
        histogram[ManyThreadsProfiler.bucket(1_000_000)]++;
        assertEquals(
                ManyThreadsProfiler.highestIn(ManyThreadsProfiler.bucket(100)),
                ManyThreadsProfiler.quantile(histogram, 0.99));
        assertEquals(
                ManyThreadsProfiler.highestIn(ManyThreadsProfiler.bucket(1_000_000)),
                ManyThreadsProfiler.quantile(histogram, 0.999));
        assertTrue(Double.isNaN(ManyThreadsProfiler.quantile(new long[ManyThreadsProfiler.BUCKETS], 0.99)));
    }

    @Test
    void aJdkIsKnownByItsReleaseFile(@TempDir Path dir) throws Exception {
        Path jdk25 = Files.createDirectories(dir.resolve("temurin-25"));
        Files.writeString(jdk25.resolve("release"), "IMPLEMENTOR=\"Eclipse Adoptium\"\nJAVA_VERSION=\"25.0.1\"\n");
        Path jdk8 = Files.createDirectories(dir.resolve("jdk8"));
        Files.writeString(jdk8.resolve("release"), "JAVA_VERSION=\"1.8.0_402\"\n");
        assertEquals(25, VirtualThreads.feature(jdk25));
        assertEquals(1, VirtualThreads.feature(jdk8));
        assertEquals(-1, VirtualThreads.feature(dir.resolve("none")));
    }

    @Test
    void virtualThreadsAreMadeOnlyWhereTheJvmHasThem() throws Exception {
        if (Runtime.version().feature() >= VirtualThreads.FIRST_FEATURE) {
            assertTrue(VirtualThreads.available());
            boolean[] ran = new boolean[1];
            Thread t = VirtualThreads.unstarted(() -> ran[0] = true);
            t.start();
            t.join();
            assertTrue(ran[0]);
        } else {
            assertTrue(VirtualThreads.unavailableReason().isPresent());
            UnsupportedOperationException e =
                    assertThrows(UnsupportedOperationException.class, () -> VirtualThreads.unstarted(() -> {}));
            assertTrue(e.getMessage().contains("JDK 21"), e.getMessage());
        }
    }
}
