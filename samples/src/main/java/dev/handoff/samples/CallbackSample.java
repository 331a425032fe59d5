// SPDX-License-Identifier: Apache-2.0
package dev.handoff.samples;

import dev.handoff.Acquisition;
import dev.handoff.Semaphore;
import dev.handoff.Waker;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * Sample 2: callbacks ({@code acquireThen(n, Waker)}) driving a single event-loop thread.
 *
 * <p>An event-loop server (think Netty or Vert.x) must never block its thread. It limits the
 * backend slots its requests use with {@link Semaphore#acquireThen(long, Waker)}: the waker
 * only posts the request back to the loop, so every handler runs on the loop thread, whether the
 * slots were free at once or came later. The handler then reads the outcome from the request's
 * {@link Acquisition}: only a granted request uses the slots and gives them back; one that was
 * woken because the server shut down ({@link Semaphore#close()}) holds nothing and gives back
 * nothing. A request that waits longer than its timeout is withdrawn with
 * {@link Acquisition#cancel()}: it then holds nothing and its waker never runs.
 */
public final class CallbackSample {

    /** Backend slots shared by all requests. */
    static final long SLOTS = 4;

    /**
     * A request to the backend.
     *
     * @param name for the log
     * @param slots the backend slots it needs
     * @param workMillis how long it uses them
     * @param timeoutMillis how long it may wait for them; 0 for no limit
     */
    record Request(String name, long slots, long workMillis, long timeoutMillis) {
    }

    /**
     * What the run proves.
     *
     * @param requests the requests submitted
     * @param completed the requests that got their slots and completed
     * @param timedOut the requests withdrawn by their timeout
     * @param refusedByClose the requests woken without a grant because the server shut down
     * @param wakesAfterCancel wakers that ran for a withdrawn request, always 0
     * @param handlersOffLoop handler steps that ran on another thread than the loop, always 0
     * @param peakSlotsInUse the most slots in use at once, at most {@code slots}
     * @param slots the capacity
     * @param availableAfter the free slots at the end, equal to {@code slots}
     */
    public record Figures(int requests, int completed, int timedOut, int refusedByClose, int wakesAfterCancel,
                          int handlersOffLoop, long peakSlotsInUse, long slots, long availableAfter) {
    }

    /** The server state. Touched only on the loop thread, so it needs no synchronization. */
    private static final class Server {
        private final Semaphore slots = new Semaphore(SLOTS);
        private final ScheduledExecutorService loop;
        private final Thread loopThread;
        private final Runnable onSettled;
        private long slotsInUse;
        private long peakSlotsInUse;
        private int completed;
        private int timedOut;
        private int refusedByClose;
        private int wakesAfterCancel;
        private int handlersOffLoop;

        /** Created on the loop thread. */
        Server(ScheduledExecutorService loop, Runnable onSettled) {
            this.loop = loop;
            this.loopThread = Thread.currentThread();
            this.onSettled = onSettled;
        }

        /**
         * One request on its way: its own waker, so that its handler can read the acquisition
         * it belongs to. Touched only on the loop thread.
         */
        private final class Call implements Waker {
            private final Request request;
            /** Stored by submit() before any task that wake() posts can run (both on the loop). */
            private Acquisition acquisition;
            private ScheduledFuture<?> timeout;
            private boolean withdrawn;

            Call(Request request) {
                this.request = request;
            }

            /** Short and non-blocking: only posts the call back to the loop. */
            @Override
            public void wake() {
                loop.execute(this::start);
            }

            private void start() {
                checkOnLoop();
                if (withdrawn) {
                    wakesAfterCancel++;              // never happens: cancel() == true means no wake
                }
                if (timeout != null) {
                    timeout.cancel(false);
                }
                if (!acquisition.isGranted()) {      // closed (shutting down): nothing held, nothing to give back
                    refusedByClose++;
                    onSettled.run();
                    return;
                }
                slotsInUse += request.slots();
                peakSlotsInUse = Math.max(peakSlotsInUse, slotsInUse);
                loop.schedule(this::finish, request.workMillis(), TimeUnit.MILLISECONDS);
            }

            private void finish() {
                checkOnLoop();
                slotsInUse -= request.slots();
                slots.release(request.slots());      // may grant waiters: their wakers post to the loop
                completed++;
                onSettled.run();
            }

            private void timeOut() {
                checkOnLoop();
                if (acquisition.cancel()) {          // still waiting: withdrawn, nothing held
                    withdrawn = true;
                    timedOut++;
                    onSettled.run();
                }
                // else it was granted or closed first: start() is already posted and will run.
            }
        }

        void submit(Request request) {
            checkOnLoop();
            Call call = new Call(request);
            // The waker may run inside acquireThen (slots free at once, or closed); it only posts
            // start() to the loop, which runs it after this task, once the handle is stored.
            call.acquisition = slots.acquireThen(request.slots(), call);
            if (request.timeoutMillis() > 0) {
                call.timeout = loop.schedule(call::timeOut, request.timeoutMillis(), TimeUnit.MILLISECONDS);
            }
        }

        /** Shuts the backend down: waiting and later requests are woken without a grant. */
        void shutDown() {
            checkOnLoop();
            slots.close();                           // holders still give their slots back
        }

        private void checkOnLoop() {
            if (Thread.currentThread() != loopThread) {
                handlersOffLoop++;
            }
        }
    }

    private CallbackSample() {
    }

    /**
     * Runs the requests and returns the figures.
     *
     * @return the figures
     * @throws InterruptedException if interrupted while waiting for the loop
     */
    public static Figures run() throws InterruptedException {
        List<Request> requests = new ArrayList<>();
        requests.add(new Request("export", 4, 100, 0));       // takes every slot for 100 ms
        requests.add(new Request("report", 2, 20, 0));
        requests.add(new Request("ping", 1, 5, 20));          // gives up after 20 ms: times out
        for (int i = 0; i < 12; i++) {
            requests.add(new Request("query-" + i, 1, 10, 0));
        }
        // Submitted once the requests above have settled, in one loop task with the shutdown.
        List<Request> atShutdown = List.of(
                new Request("flush", 4, 20, 0),                // every slot free again: granted at once
                new Request("late", 1, 5, 0));                 // waits behind it, then the shutdown wakes it
        Request afterShutdown = new Request("after-shutdown", 1, 5, 0); // closed: refused at once

        ScheduledExecutorService loop = Executors.newSingleThreadScheduledExecutor(task -> new Thread(task, "event-loop"));
        CountDownLatch settled = new CountDownLatch(requests.size());
        CountDownLatch settledAtShutdown = new CountDownLatch(atShutdown.size() + 1);
        Server server;
        try {
            server = loop.submit(() -> new Server(loop, () -> {
                if (settled.getCount() > 0) {
                    settled.countDown();
                } else {
                    settledAtShutdown.countDown();
                }
            })).get();
            loop.execute(() -> requests.forEach(server::submit));
            settled.await();
            loop.execute(() -> {
                atShutdown.forEach(server::submit);
                server.shutDown();
                server.submit(afterShutdown);
            });
            settledAtShutdown.await();
        } catch (ExecutionException e) {
            throw new IllegalStateException(e.getCause());
        } finally {
            loop.shutdown();
        }
        loop.awaitTermination(1, TimeUnit.MINUTES);        // after this, the loop's writes are visible
        return new Figures(requests.size() + atShutdown.size() + 1, server.completed, server.timedOut,
                server.refusedByClose, server.wakesAfterCancel, server.handlersOffLoop, server.peakSlotsInUse,
                SLOTS, server.slots.availablePermits());
    }

    /**
     * Runs the sample and prints its figures.
     *
     * @param args ignored
     * @throws InterruptedException if interrupted
     */
    public static void main(String[] args) throws InterruptedException {
        Figures f = run();
        System.out.println("2. Callbacks: acquireThen(n, Waker) on a single event-loop thread");
        System.out.printf("   %d requests, %d backend slots; \"export\" takes all of them for 100 ms,%n",
                f.requests(), f.slots());
        System.out.println("   \"ping\" waits behind it with a 20 ms timeout and is cancelled;");
        System.out.println("   then the backend shuts down while \"late\" waits, and \"after-shutdown\" arrives");
        System.out.printf("   completed: %d, timed out and cancelled: %d, refused by the shutdown: %d,%n",
                f.completed(), f.timedOut(), f.refusedByClose());
        System.out.printf("   wakers run after cancel: %d%n", f.wakesAfterCancel());
        System.out.printf("   handler steps off the loop thread: %d; peak slots in use: %d of %d%n",
                f.handlersOffLoop(), f.peakSlotsInUse(), f.slots());
        System.out.printf("   slots back at the end: %d of %d%n", f.availableAfter(), f.slots());
    }
}
