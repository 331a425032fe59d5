package dev.handoff.samples;

import dev.handoff.Acquisition;
import dev.handoff.Semaphore;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * Sample 2: callbacks ({@code acquire(n, Waker)}) driving a single event-loop thread.
 *
 * <p>An event-loop server (think Netty or Vert.x) must never block its thread. It limits the
 * backend slots its requests use with {@link Semaphore#acquire(long, dev.handoff.Waker)}: the waker
 * only posts the request back to the loop, so every handler runs on the loop thread, whether the
 * slots were free at once or came later. A request that waits longer than its timeout is withdrawn
 * with {@link Acquisition#cancel()}: it then holds nothing and its waker never runs.
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
     * @param wakesAfterCancel wakers that ran for a withdrawn request, always 0
     * @param handlersOffLoop handler steps that ran on another thread than the loop, always 0
     * @param peakSlotsInUse the most slots in use at once, at most {@code slots}
     * @param slots the capacity
     * @param availableAfter the free slots at the end, equal to {@code slots}
     */
    public record Figures(int requests, int completed, int timedOut, int wakesAfterCancel, int handlersOffLoop,
                          long peakSlotsInUse, long slots, long availableAfter) {
    }

    /** The server state. Touched only on the loop thread, so it needs no synchronization. */
    private static final class Server {
        private final Semaphore slots = new Semaphore(SLOTS);
        private final ScheduledExecutorService loop;
        private final Thread loopThread;
        private final Map<Request, ScheduledFuture<?>> timeouts = new HashMap<>();
        private final List<Request> cancelled = new ArrayList<>();
        private final Runnable onSettled;
        private long slotsInUse;
        private long peakSlotsInUse;
        private int completed;
        private int wakesAfterCancel;
        private int handlersOffLoop;

        /** Created on the loop thread. */
        Server(ScheduledExecutorService loop, Runnable onSettled) {
            this.loop = loop;
            this.loopThread = Thread.currentThread();
            this.onSettled = onSettled;
        }

        void submit(Request request) {
            checkOnLoop();
            // The waker is short and non-blocking: it only posts the request back to the loop.
            Acquisition acquisition = slots.acquire(request.slots(), () -> loop.execute(() -> start(request)));
            if (request.timeoutMillis() > 0) {
                timeouts.put(request, loop.schedule(() -> timeOut(request, acquisition),
                        request.timeoutMillis(), TimeUnit.MILLISECONDS));
            }
        }

        private void start(Request request) {
            checkOnLoop();
            if (cancelled.contains(request)) {
                wakesAfterCancel++;                  // never happens: cancel() == true means no wake
            }
            ScheduledFuture<?> timeout = timeouts.remove(request);
            if (timeout != null) {
                timeout.cancel(false);
            }
            slotsInUse += request.slots();
            peakSlotsInUse = Math.max(peakSlotsInUse, slotsInUse);
            loop.schedule(() -> finish(request), request.workMillis(), TimeUnit.MILLISECONDS);
        }

        private void finish(Request request) {
            checkOnLoop();
            slotsInUse -= request.slots();
            slots.release(request.slots());          // may grant waiters: their wakers post to the loop
            completed++;
            onSettled.run();
        }

        private void timeOut(Request request, Acquisition acquisition) {
            checkOnLoop();
            if (acquisition.cancel()) {              // still waiting: withdrawn, nothing held
                cancelled.add(request);
                onSettled.run();
            }
            // else the grant won the race: start(request) is already posted and will run.
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

        ScheduledExecutorService loop = Executors.newSingleThreadScheduledExecutor(task -> new Thread(task, "event-loop"));
        CountDownLatch settled = new CountDownLatch(requests.size());
        Server server;
        try {
            server = loop.submit(() -> new Server(loop, settled::countDown)).get();
            loop.execute(() -> requests.forEach(server::submit));
            settled.await();
        } catch (ExecutionException e) {
            throw new IllegalStateException(e.getCause());
        } finally {
            loop.shutdown();
        }
        loop.awaitTermination(1, TimeUnit.MINUTES);        // after this, the loop's writes are visible
        return new Figures(requests.size(), server.completed, server.cancelled.size(), server.wakesAfterCancel,
                server.handlersOffLoop, server.peakSlotsInUse, SLOTS, server.slots.availablePermits());
    }

    /**
     * Runs the sample and prints its figures.
     *
     * @param args ignored
     * @throws InterruptedException if interrupted
     */
    public static void main(String[] args) throws InterruptedException {
        Figures f = run();
        System.out.println("2. Callbacks: acquire(n, Waker) on a single event-loop thread");
        System.out.printf("   %d requests, %d backend slots; \"export\" takes all of them for 100 ms,%n",
                f.requests(), f.slots());
        System.out.println("   \"ping\" waits behind it with a 20 ms timeout and is cancelled");
        System.out.printf("   completed: %d, timed out and cancelled: %d, wakers run after cancel: %d%n",
                f.completed(), f.timedOut(), f.wakesAfterCancel());
        System.out.printf("   handler steps off the loop thread: %d; peak slots in use: %d of %d%n",
                f.handlersOffLoop(), f.peakSlotsInUse(), f.slots());
        System.out.printf("   slots back at the end: %d of %d%n", f.availableAfter(), f.slots());
    }
}
