// SPDX-License-Identifier: Apache-2.0
package dev.handoff.docs;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;

/**
 * The stand-ins the documentation's snippets call: a downstream whose work succeeds or fails, as
 * the scenario of {@link Scenario} asks, and counts how often it ran.
 */
public final class Fakes {

    private Fakes() {
    }

    /** Where asynchronous fake work completes: a little later, on another thread. */
    static final Executor LATER = CompletableFuture.delayedExecutor(2, TimeUnit.MILLISECONDS);

    /** The failure of the work after the grant. */
    public static final class WorkFailed extends RuntimeException {
        WorkFailed() {
            super("the work after the grant failed (as the scenario asked)");
        }
    }

    /**
     * The work guarded by a snippet: it fails if the scenario says so, counts its runs, and notes
     * whether it ever ran while the snippet did not hold what it guards (a release too early).
     */
    public static final class Work {
        final boolean fails;
        final AtomicInteger runs = new AtomicInteger();
        final AtomicBoolean ranUnguarded = new AtomicBoolean();
        /** Whether the snippet holds its permits or lock now; set by {@link Scenario#expectUsual}. */
        volatile BooleanSupplier guarded = () -> true;

        Work(Scenario.Ending ending) {
            this.fails = ending == Scenario.Ending.WORK_FAILS;
        }

        public void run() {
            runs.incrementAndGet();
            check();
            if (fails) {
                throw new WorkFailed();
            }
        }

        <T> CompletableFuture<T> async(T value) {
            runs.incrementAndGet();
            check();
            return CompletableFuture.supplyAsync(() -> {
                check();                           // still held while the stage runs
                if (fails) {
                    throw new WorkFailed();
                }
                return value;
            }, LATER);
        }

        /** Notes a run while the snippet did not hold what it guards. */
        private void check() {
            if (!guarded.getAsBoolean()) {
                ranUnguarded.set(true);
            }
        }
    }

    /** What a fake request returns. */
    public record Response(int status) {
    }

    /** A downstream service, blocking and asynchronous. */
    public interface Client {
        void send(byte[] body);

        CompletableFuture<Response> sendAsync(byte[] body);
    }

    /** A client whose calls are the scenario's {@link Work}. */
    static Client client(Work work) {
        return new Client() {
            @Override
            public void send(byte[] body) {
                work.run();
            }

            @Override
            public CompletableFuture<Response> sendAsync(byte[] body) {
                return work.async(new Response(200));
            }
        };
    }
}
