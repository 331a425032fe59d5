// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.Test;

/**
 * A write lock's handle releases what it holds now (the write lock, or the read lock a downgrade
 * made of it), and {@link RwLock.WritePermits#downgrade()} moves the lock to a read handle.
 */
class RwLockHandleTest {

    /** Nothing held, nobody waiting: a writer gets in at once. */
    private static void assertFree(RwLock lock) {
        assertFalse(lock.isWriteLocked(), lock::toString);
        assertEquals(0, lock.readLockCount(), lock::toString);
        assertEquals(0, lock.queueLength(), lock::toString);
        assertTrue(lock.tryWriteLock(), lock::toString);
        lock.writeUnlock();
    }

    @Test
    void downgradeInsideTryWithResourcesReleasesTheReadLock() throws InterruptedException {
        RwLock lock = new RwLock(4);
        try (Permits write = lock.writeLockBlocking()) {
            assertTrue(lock.isWriteLocked());
            lock.downgrade();
            assertFalse(lock.isWriteLocked());
            assertEquals(1, lock.readLockCount());
            assertFalse(lock.tryWriteLock()); // the read lock keeps writers out
            assertFalse(write.isReleased());
        }
        assertFree(lock);
    }

    @Test
    void closeAfterDowngradeLetsAQueuedWriterIn() throws InterruptedException {
        RwLock lock = new RwLock(3);
        RwLock.WritePermits write = lock.writeLockBlocking();
        CompletableFuture<RwLock.WritePermits> next = lock.writeLockAsync();
        lock.downgrade();
        assertFalse(next.isDone()); // handed the two read permits given up, waits for the third
        write.close();
        assertTrue(next.isDone());
        assertTrue(lock.isWriteLocked());
        next.join().close();
        assertFree(lock);
    }

    @Test
    void handleDowngradeReturnsTheReadHandleAndReleasesTheWriteHandle() throws InterruptedException {
        RwLock lock = new RwLock(4);
        RwLock.WritePermits write = lock.writeLockBlocking();
        Permits read = write.downgrade();
        assertTrue(write.isReleased());
        assertFalse(write.release()); // closing it does nothing now
        write.close();
        assertEquals(1, lock.readLockCount());
        assertEquals(1, read.permits());
        assertTrue(lock.tryReadLock()); // other readers may join
        lock.readUnlock();
        assertTrue(read.release());
        assertFalse(read.release());
        assertFree(lock);
    }

    @Test
    void handleDowngradeAfterTheLockWasDowngradedMovesTheReadLock() throws InterruptedException {
        RwLock lock = new RwLock(4);
        RwLock.WritePermits write = lock.writeLockBlocking();
        lock.downgrade();
        Permits read = write.downgrade();
        assertTrue(write.isReleased());
        assertEquals(1, lock.readLockCount());
        read.close();
        assertFree(lock);
    }

    @Test
    void downgradeOfAReleasedHandleThrowsAndChangesNothing() throws InterruptedException {
        RwLock lock = new RwLock(4);
        RwLock.WritePermits write = lock.writeLockBlocking();
        Permits read = write.downgrade();
        IllegalStateException twice = assertThrows(IllegalStateException.class, write::downgrade);
        assertTrue(twice.getMessage().startsWith("downgrade(): "), twice.getMessage());
        assertEquals(1, lock.readLockCount());
        read.close();

        RwLock.WritePermits closed = lock.writeLockBlocking();
        closed.close();
        assertThrows(IllegalStateException.class, closed::downgrade);
        assertFree(lock);
    }

    @Test
    void asyncWriteHandleDowngradesToo() {
        RwLock lock = new RwLock(2);
        assertTrue(lock.tryReadLock());
        CompletableFuture<RwLock.WritePermits> writer = lock.writeLockAsync();
        assertFalse(writer.isDone());
        lock.readUnlock();
        try (Permits write = writer.join()) {
            lock.downgrade();
            assertEquals(1, lock.readLockCount());
            assertFalse(write.isReleased());
        }
        assertFree(lock);

        Permits read = lock.writeLockAsync().join().downgrade(); // granted at once
        assertEquals(1, lock.readLockCount());
        read.close();
        assertFree(lock);
    }

    @Test
    void cancelledOrTimedOutAsyncWriterHoldsNothing() {
        RwLock lock = new RwLock(2);
        assertTrue(lock.tryReadLock());
        CompletableFuture<RwLock.WritePermits> cancelled = lock.writeLockAsync();
        assertTrue(cancelled.cancel(true));
        assertTrue(cancelled.isCancelled());
        assertEquals(0, lock.queueLength());
        CompletableFuture<RwLock.WritePermits> timedOut = lock.writeLockAsync();
        assertTrue(timedOut.completeExceptionally(new TimeoutException("writer")));
        assertEquals(0, lock.queueLength());
        lock.readUnlock();
        assertFree(lock);
    }

    @Test
    void aGrantLandingAfterTheFutureWasSettledIsReleased() {
        RwLock lock = new RwLock(2);
        assertTrue(lock.tryReadLock());
        CompletableFuture<RwLock.WritePermits> writer = lock.writeLockAsync();
        // completed from outside: the wait stays withdrawn-or-released, never held
        assertTrue(writer.complete(null));
        lock.readUnlock();
        assertFree(lock);
    }

    @Test
    void scopedWriteReleasesWhatItHoldsAfterADowngrade() {
        RwLock lock = new RwLock(4);
        int value = lock.withWriteLockAsync(() -> {
                    lock.downgrade();
                    return CompletableFuture.completedFuture(7);
                })
                .join();
        assertEquals(7, value);
        assertFree(lock);
    }

    @Test
    void describesTheHandle() throws InterruptedException {
        RwLock lock = new RwLock(4);
        RwLock.WritePermits write = lock.writeLockBlocking();
        assertEquals("WritePermits[4, held]", write.toString());
        lock.downgrade();
        assertEquals("WritePermits[4, downgraded to a read lock]", write.toString());
        write.close();
        assertEquals("WritePermits[4, released]", write.toString());
    }
}
