// SPDX-License-Identifier: Apache-2.0
package dev.handoff.docs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.handoff.SemaphoreClosedException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * Runs the Java snippets of docs/guide/fair-share.md ({@link FairShare}) through success, a failure
 * of the work after the grant, and a failure of the acquisition itself (it waits behind the key's
 * cap and the semaphore is closed under it); every path gives its connection back to its tenant.
 */
class FairShareSnippetsTest {

    static final FairShare.Result ROWS = new FairShare.Result("3 rows");

    /** A database that answers, or fails; its async answer is completed by the test. */
    static final class Stub implements FairShare.Database {
        volatile RuntimeException failure;
        final CompletableFuture<FairShare.Result> pending = new CompletableFuture<>();

        @Override
        public FairShare.Result run(String sql) {
            if (failure != null) {
                throw failure;
            }
            return ROWS;
        }

        @Override
        public CompletableFuture<FairShare.Result> runAsync(String sql) {
            if (failure != null) {
                throw failure; // thrown, not a failed stage: the snippet must still give the connection back
            }
            return pending;
        }
    }

    final Stub database = new Stub();
    final FairShare f = new FairShare(database);

    void allBack() {
        assertEquals(0, f.connections.heldPermits("tiny-shop"));
        assertEquals(0, f.connections.heldPermits("acme"));
        assertEquals(32, f.connections.availablePermits());
    }

    @Test
    void success() throws Exception {
        assertSame(ROWS, f.query("tiny-shop", "select 1"));
        CompletableFuture<FairShare.Result> rows = f.queryAsync("acme", "select 2");
        assertEquals(1, f.connections.heldPermits("acme"), "held while the query runs");
        database.pending.complete(ROWS);
        assertSame(ROWS, rows.get(10, TimeUnit.SECONDS));
        allBack();
    }

    @Test
    void failureOfTheWorkAfterTheGrant() {
        database.failure = new IllegalStateException("connection reset");
        assertThrows(IllegalStateException.class, () -> f.query("tiny-shop", "select 1"));
        CompletableFuture<FairShare.Result> rows = f.queryAsync("acme", "select 2");
        assertInstanceOf(IllegalStateException.class, assertThrows(CompletionException.class, rows::join).getCause());
        allBack();
    }

    @Test
    void failureOfTheAcquisitionItself() throws Exception {
        for (int i = 0; i < 16; i++) {
            assertTrue(f.connections.tryAcquire("tiny-shop", 1)); // the tenant at its cap of 16
        }
        AtomicReference<Throwable> blocking = new AtomicReference<>();
        Thread waiter = new Thread(() -> {
            try {
                f.query("tiny-shop", "select 1");
            } catch (Throwable t) {
                blocking.set(t);
            }
        });
        waiter.start();
        CompletableFuture<FairShare.Result> rows = f.queryAsync("tiny-shop", "select 2");
        while (f.connections.queueLength("tiny-shop") < 2) {
            Thread.onSpinWait();
        }
        assertFalse(rows.isDone());
        f.connections.close();
        waiter.join(TimeUnit.SECONDS.toMillis(10));
        assertInstanceOf(SemaphoreClosedException.class, blocking.get());
        ExecutionException e = assertThrows(ExecutionException.class, () -> rows.get(10, TimeUnit.SECONDS));
        assertInstanceOf(SemaphoreClosedException.class, e.getCause());
        f.connections.release("tiny-shop", 16); // only the permits taken here: the snippets took none
        allBack();
    }

    @Test
    void aCallerThatCancelsBeforeTheGrantLeavesNothingHeld() {
        for (int i = 0; i < 16; i++) {
            assertTrue(f.connections.tryAcquire("acme", 1));
        }
        CompletableFuture<FairShare.Result> rows = f.queryAsync("acme", "select 2");
        assertTrue(rows.cancel(false));
        assertEquals(0, f.connections.queueLength("acme"), "the request was withdrawn");
        f.connections.release("acme", 16);
        allBack();
    }
}
