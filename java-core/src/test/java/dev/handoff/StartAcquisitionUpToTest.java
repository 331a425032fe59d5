// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * {@link Semaphore#startAcquisitionUpTo}: an up-to request whose node is a subclass of
 * {@link Acquisition} (what the Kotlin {@code acquireUpTo} is built on). The node keeps its
 * minimum without a field of its own, with or without a wait listener, also once it failed.
 */
@Timeout(60) // a guard against hangs, not a speed check
class StartAcquisitionUpToTest {

    /** A node that counts its wake-ups and can name its call. */
    static final class Node extends Acquisition {
        final AtomicInteger wakes = new AtomicInteger();
        private final String name;

        Node() {
            this(null);
        }

        Node(String name) {
            this.name = name;
        }

        @Override
        protected String callName() {
            return name;
        }

        @Override
        protected void wake() {
            wakes.incrementAndGet();
        }
    }

    @Test
    void grantedAtOnceItTakesWhatIsFreeUpToItsMaximum() {
        Semaphore s = new Semaphore(10);
        assertTrue(s.tryAcquire(3));
        Node capped = s.startAcquisitionUpTo(2, 5, new Node());
        assertTrue(capped.isGranted());
        assertEquals(5, capped.permits(), "7 free, at most 5 taken");
        Node rest = s.startAcquisitionUpTo(1, 5, new Node());
        assertTrue(rest.isGranted());
        assertEquals(2, rest.permits(), "only 2 were left");
        assertEquals(1, capped.wakes.get());
        assertEquals(1, rest.wakes.get());
        assertEquals(0, s.availablePermits());
        s.release(3 + 5 + 2);
        assertEquals(10, s.availablePermits());
    }

    @Test
    void itWaitsInFifoOrderForItsMinimumAndTakesWhatTheReleasesHandOut() {
        Semaphore s = new Semaphore(10);
        assertTrue(s.tryAcquire(10));
        Node exact = s.startAcquisition(4, new Node());
        Node upTo = s.startAcquisitionUpTo(2, 5, new Node());
        assertEquals(2, s.queueLength());
        assertEquals(4 + 2, s.queuedPermits(), "an up-to request weighs its minimum in the queue");
        assertEquals("Acquisition[permits=2..5, waiting]", upTo.toString());
        assertEquals(5, upTo.permits(), "its maximum until the grant");

        s.release(5); // 4 to the head, 1 handed to the up-to request, which needs 2
        assertTrue(exact.isGranted());
        assertFalse(upTo.isGranted());
        assertEquals(1, s.queueLength());
        assertEquals(2, s.queuedPermits());
        assertEquals(0, upTo.wakes.get());

        s.release(3); // 1 + 3 = 4: at least 2, at most 5
        assertTrue(upTo.isGranted());
        assertEquals(4, upTo.permits(), "what the releases handed out");
        assertEquals("Acquisition[permits=4, granted]", upTo.toString());
        assertEquals(1, upTo.wakes.get());
        assertEquals(0, s.queueLength());
        assertEquals(0, s.availablePermits());
        s.release(2 + 4 + 4); // ours, the exact request's, the up-to request's
        assertEquals(10, s.availablePermits());
    }

    @Test
    void aCancelledUpToHeadHandsItsPartialPermitsOn() {
        Semaphore s = new Semaphore(4);
        assertTrue(s.tryAcquire(4));
        Node upTo = s.startAcquisitionUpTo(3, 4, new Node());
        RecordingWaker behind = new RecordingWaker();
        s.acquireThen(1, behind);
        s.release(2); // handed to the up-to head, which needs 3
        assertEquals(0, s.availablePermits());
        assertTrue(upTo.cancel());
        assertEquals(1, behind.wakes.get(), "one of the head's two went on to the next waiter");
        assertEquals(1, s.availablePermits(), "the other is free");
        assertFalse(upTo.isGranted());
        assertEquals(0, upTo.wakes.get());
        assertEquals(0, s.queueLength());
        s.release(1 + 2);
        assertEquals(4, s.availablePermits());
    }

    @Test
    void badArgumentsNameTheCallTheValuesAndTheLimitAndChangeNothing() {
        Semaphore s = new Semaphore(10);
        assertTrue(s.tryAcquire(4));
        Node node = new Node();
        IllegalArgumentException zero =
                assertThrows(IllegalArgumentException.class, () -> s.startAcquisitionUpTo(0, 2, node));
        assertEquals("startAcquisitionUpTo(0, 2): needs 1 <= min <= max", zero.getMessage());
        IllegalArgumentException inverted =
                assertThrows(IllegalArgumentException.class, () -> s.startAcquisitionUpTo(3, 2, node));
        assertEquals("startAcquisitionUpTo(3, 2): needs 1 <= min <= max", inverted.getMessage());
        IllegalArgumentException tooBig =
                assertThrows(IllegalArgumentException.class, () -> s.startAcquisitionUpTo(11, 20, node));
        assertEquals(
                "startAcquisitionUpTo(11, 20): min exceeds the capacity 10, so it could never be granted",
                tooBig.getMessage());
        IllegalArgumentException namedTooBig = assertThrows(
                IllegalArgumentException.class, () -> s.startAcquisitionUpTo(11, 20, new Node("readChunk")));
        assertEquals(
                "readChunk(11, 20): min exceeds the capacity 10, so it could never be granted",
                namedTooBig.getMessage());
        IllegalArgumentException nullTooBig =
                assertThrows(IllegalArgumentException.class, () -> s.startAcquisitionUpTo(11, 20, null));
        assertEquals(
                "startAcquisitionUpTo(11, 20): min exceeds the capacity 10, so it could never be granted",
                nullTooBig.getMessage());
        NullPointerException none = assertThrows(NullPointerException.class, () -> s.startAcquisitionUpTo(1, 2, null));
        assertEquals("startAcquisitionUpTo(1, 2, null): the acquisition is null", none.getMessage());
        assertNull(node.startedOn(), "never started");
        assertEquals(6, s.availablePermits());
        assertEquals(0, s.queueLength());

        s.startAcquisitionUpTo(1, 2, node);
        assertEquals(2, node.permits());
        IllegalStateException again =
                assertThrows(IllegalStateException.class, () -> s.startAcquisitionUpTo(1, 3, node));
        assertTrue(
                again.getMessage().startsWith("startAcquisitionUpTo(1, 3): this acquisition was already started"),
                again.getMessage());
        assertEquals(2, node.permits(), "the first start stands");
        IllegalStateException againEqual =
                assertThrows(IllegalStateException.class, () -> s.startAcquisitionUpTo(2, 2, node));
        assertTrue(
                againEqual.getMessage().startsWith("startAcquisitionUpTo(2, 2): this acquisition was already started"),
                againEqual.getMessage());
        assertEquals(4, s.availablePermits());
        s.release(4 + 2);
        assertEquals(10, s.availablePermits());
    }

    @Test
    void aRefusalNamesTheRangeAndLeavesTheNodeFreeToStartAgain() {
        Semaphore s = Semaphore.builder(2).maxQueueLength(0).build();
        assertTrue(s.tryAcquire(2));
        Node named = new Node("readChunk");
        SemaphoreRejectedException shed =
                assertThrows(SemaphoreRejectedException.class, () -> s.startAcquisitionUpTo(1, 2, named));
        assertTrue(
                shed.getMessage().startsWith("readChunk(1, 2): rejected, the wait queue is full"), shed.getMessage());
        SemaphoreRejectedException unnamed =
                assertThrows(SemaphoreRejectedException.class, () -> s.startAcquisitionUpTo(1, 2, new Node()));
        assertTrue(unnamed.getMessage().startsWith("startAcquisitionUpTo(1, 2): rejected"), unnamed.getMessage());
        SemaphoreRejectedException equalBounds =
                assertThrows(SemaphoreRejectedException.class, () -> s.startAcquisitionUpTo(2, 2, new Node()));
        assertTrue(
                equalBounds.getMessage().startsWith("startAcquisitionUpTo(2, 2): rejected"), equalBounds.getMessage());
        assertEquals(0, s.queueLength());
        assertEquals(0, named.wakes.get());

        s.release(2);
        s.startAcquisitionUpTo(1, 2, named); // refused before the core saw it: it can start now
        assertTrue(named.isGranted());
        assertEquals(2, named.permits());
        s.release(2);
        assertEquals(2, s.availablePermits());
    }

    /** A shrink fails a waiting up-to request by its minimum; the failure is kept beside it. */
    @Test
    void aShrinkFailsAWaitingUpToRequestWhoseMinimumNoLongerFits() {
        for (boolean listened : List.of(false, true)) {
            WaitListenerTest.Log log = new WaitListenerTest.Log();
            Semaphore s = listened ? Semaphore.builder(6).listener(log).build() : new Semaphore(6);
            assertTrue(s.tryAcquire(6));
            Node heavy = s.startAcquisitionUpTo(4, 6, new Node());
            Node light = s.startAcquisitionUpTo(2, 6, new Node());
            assertEquals(4 + 2, s.queuedPermits(), "listened=" + listened);
            s.setCapacity(3); // 4 can never fit any more; 2 still can
            assertEquals(1, heavy.wakes.get());
            IllegalStateException failure = assertInstanceOf(IllegalStateException.class, heavy.failure());
            assertTrue(failure.getMessage().contains("the weight 4 exceeds the capacity 3"), failure.getMessage());
            assertTrue(heavy.toString().startsWith("Acquisition[permits=6, failed: "), heavy.toString());
            assertFalse(light.isGranted());
            assertEquals(2, s.queuedPermits(), "the failed request's minimum left the queue with it");
            assertEquals("Acquisition[permits=2..6, waiting]", light.toString());
            s.release(6); // pays the debt of 3, then 3 to the light request: at least 2, at most 6
            assertTrue(light.isGranted());
            assertEquals(3, light.permits());
            if (listened) {
                assertEquals(
                        List.of("queued 4 ahead 0", "queued 2 ahead 1", "FAILED 4 ahead 0", "GRANTED 3 ahead 1"),
                        log.snapshot());
            } else {
                assertEquals(List.of(), log.snapshot());
            }
            s.release(3);
            assertEquals(3, s.availablePermits());
        }
    }

    @Test
    void tryAcquireUpToWithAMinimumTakesAtLeastThatOrNothing() {
        Semaphore s = new Semaphore(10);
        assertTrue(s.tryAcquire(7));
        assertEquals(0, s.tryAcquireUpTo(4, 8), "3 free: fewer than the minimum, nothing taken");
        assertEquals(3, s.availablePermits());
        assertEquals(3, s.tryAcquireUpTo(2, 8));
        s.release(5);
        assertEquals(4, s.tryAcquireUpTo(1, 4), "5 free, at most 4");
        RecordingWaker waiting = new RecordingWaker();
        s.acquireThen(3, waiting); // 1 free: it waits, holding that 1
        s.release(1); // 2 of its 3
        assertEquals(1, s.queueLength());
        assertEquals(0, s.tryAcquireUpTo(1, 1), "never barges past a waiter");
        IllegalArgumentException zero = assertThrows(IllegalArgumentException.class, () -> s.tryAcquireUpTo(0, 1));
        assertEquals("tryAcquireUpTo(0, 1): needs 1 <= min <= max", zero.getMessage());
        IllegalArgumentException inverted = assertThrows(IllegalArgumentException.class, () -> s.tryAcquireUpTo(3, 2));
        assertEquals("tryAcquireUpTo(3, 2): needs 1 <= min <= max", inverted.getMessage());
        assertEquals(0, s.tryAcquireUpTo(11, 11), "above the capacity: never fits, as tryAcquire(11) is false");
        s.release(2); // the waiter's third, and 1 free
        assertEquals(1, waiting.wakes.get());
        assertEquals(1, s.availablePermits());
        s.release(6 + 3); // what we still hold (10 - 5 + 4 - 1 - 2), and the waiter's
        assertEquals(10, s.availablePermits());
        s.close();
        assertEquals(0, s.tryAcquireUpTo(1, 10), "closed");
    }

    /** A claim that throws fails the up-to node; its minimum and its failure are both kept. */
    @Test
    void aThrowingClaimFailsTheUpToNodeAndItsPermitsGoOn() {
        class Throwing extends Acquisition {
            @Override
            protected boolean claim() {
                throw new IllegalStateException("claim broke");
            }

            @Override
            protected void wake() {}
        }
        Semaphore s = new Semaphore(3);
        assertTrue(s.tryAcquire(3));
        Throwing failing = s.startAcquisitionUpTo(2, 3, new Throwing());
        RecordingWaker behind = new RecordingWaker();
        s.acquireThen(1, behind);
        s.release(2);
        assertEquals("claim broke", failing.failure().getMessage());
        assertFalse(failing.isGranted());
        assertEquals(1, behind.wakes.get(), "the failed node's permits went on");
        assertEquals(1, s.availablePermits());
        s.release(1 + 1);
        assertEquals(3, s.availablePermits());
    }
}
