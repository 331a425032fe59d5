// SPDX-License-Identifier: Apache-2.0
package dev.handoff.docs;

import dev.handoff.Acquisition;
import dev.handoff.Permits;
import dev.handoff.Semaphore;
import dev.handoff.Waker;
import dev.handoff.docs.Fakes.Work;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;

/** The Java guide: each face of the semaphore. */
final class JavaFaces {

    final Semaphore budget = new Semaphore(1_000);
    private final Work work;
    int shed;

    JavaFaces(Work work) {
        this.work = work;
    }

    private void work() {
        work.run();
    }

    private void shedLoad() {
        shed++;
    }

    void tryFace() {
        // tag::java-try[]
        if (budget.tryAcquire(10)) {                        // never waits, never queues, no allocation
            try {
                work();
            } finally {
                budget.release(10);
            }
        } else {
            shedLoad();                                     // busy, or someone is already waiting
        }
        // end::java-try[]
    }

    void blockingFace() throws InterruptedException {
        // tag::java-blocking[]
        try (Permits permits = budget.acquireBlocking(50)) { // parks; virtual threads are not pinned
            work();
        }
        // end::java-blocking[]
    }

    boolean timedFace() throws InterruptedException {
        // tag::java-timed[]
        if (!budget.tryAcquireBlocking(50, Duration.ofMillis(100))) {
            return false;                                   // timed out: nothing held
        }
        try {
            work();
        } finally {
            budget.release(50);
        }
        return true;
        // end::java-timed[]
    }

    CompletableFuture<Void> futureFace() {
        // tag::java-future[]
        return budget.acquireAsync(200)
                .orTimeout(5, TimeUnit.SECONDS)             // fails the wait itself: nothing held
                .thenAccept(permits -> {                    // runs only after a grant
                    try (permits) {
                        work();
                    }
                });
        // end::java-future[]
    }

    CompletableFuture<String> withPermitsFace() {
        // tag::java-with-permits-async[]
        return budget.withPermitsAsync(200, () -> work.async("stored"));
        // end::java-with-permits-async[]
    }

    // tag::java-callback[]
    /** Created and started on the event loop, so the handle is stored before run() can read it. */
    final class Send implements Waker {
        private final Executor loop;
        private final long bytes;
        private Acquisition acquisition;
        final CompletableFuture<String> done = new CompletableFuture<>();

        Send(Executor loop, long bytes) {
            this.loop = loop;
            this.bytes = bytes;
        }

        void start() {
            acquisition = budget.acquireThen(bytes, this); // may call wake() before it returns
        }

        @Override
        public void wake() {                               // the grant (or the close) is final
            loop.execute(this::run);                       // back to the loop; never block here
        }

        private void run() {
            if (!acquisition.isGranted()) {                // closed: nothing held, nothing to release
                done.complete("shutting down");
                return;
            }
            try {
                work();
                done.complete("sent");
            } catch (RuntimeException e) {
                done.completeExceptionally(e);
            } finally {
                budget.release(bytes);                     // granted: released once, however it ends
            }
        }
    }
    // end::java-callback[]
}
