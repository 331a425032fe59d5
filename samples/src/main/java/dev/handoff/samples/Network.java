// SPDX-License-Identifier: Apache-2.0
package dev.handoff.samples;

import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * Scaffolding of the download samples: a fake network, one thread that completes each download
 * when its time is up, like the I/O thread of an asynchronous HTTP client.
 */
final class Network implements AutoCloseable {

    private final ScheduledExecutorService thread =
            Executors.newSingleThreadScheduledExecutor(task -> new Thread(task, "network"));

    /** The sizes of a batch of downloads, from 16 KiB to 8 MiB, the same on every run. */
    static long[] sizes(int count) {
        Random random = new Random(42);
        long[] sizes = new long[count];
        for (int i = 0; i < count; i++) {
            sizes[i] = (16L << 10) << random.nextInt(10);
        }
        return sizes;
    }

    /** Runs {@code task} on the network thread, waits for it and returns its result. */
    <T> T call(Supplier<T> task) {
        return CompletableFuture.supplyAsync(task, thread).join();
    }

    /** A download of {@code size} bytes: completes with {@code size} on the network thread after 1 ms plus 1 ms per MiB. */
    CompletableFuture<Long> download(long size) {
        CompletableFuture<Long> body = new CompletableFuture<>();
        thread.schedule(() -> body.complete(size), 1_000 + (size >> 10), TimeUnit.MICROSECONDS);
        return body;
    }

    @Override
    public void close() {
        thread.shutdown();
    }
}
