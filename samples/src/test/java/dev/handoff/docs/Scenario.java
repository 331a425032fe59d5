// SPDX-License-Identifier: Apache-2.0
package dev.handoff.docs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.fail;

import dev.handoff.Mutex;
import dev.handoff.RwLock;
import dev.handoff.Semaphore;
import dev.handoff.SemaphoreClosedException;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

/**
 * Runs a documented snippet to one of its three endings and checks that it gave back exactly what
 * it was granted: the work after the grant succeeds; it fails; or the acquisition itself fails
 * (the snippet waits behind a holder and the primitive is closed under it).
 *
 * <p>How a wrong release shows: a <em>bystander</em> holds permits across the scenario (for a
 * semaphore), and in the failing acquisition a <em>blocker</em> holds the rest. A snippet that
 * releases what it never got, or twice, gives back their permits (or unlocks their lock), so one of
 * their own releases throws; a snippet that leaks leaves the primitive short at the end.
 */
public final class Scenario {

    private Scenario() {
    }

    /** How a scenario ends. */
    public enum Ending {
        /** The work after the grant succeeds. */
        SUCCESS,
        /** The work after the grant fails. */
        WORK_FAILS,
        /** The acquisition fails: the snippet waits and the primitive is closed under it. */
        ACQUISITION_FAILS
    }

    /** What a snippet guards, seen by the scenario. */
    interface Guarded {
        void holdBystander();

        void releaseBystander();

        void holdRest();

        void releaseRest();

        int queueLength();

        void close();

        boolean idle();

        /** Whether the snippet holds its permits or lock now (beyond what the bystander holds). */
        boolean snippetHolds();

        String describe();
    }

    static Guarded of(Semaphore s) {
        return new Guarded() {
            @Override public void holdBystander() {
                if (!s.tryAcquire(1)) fail("the bystander's permit is not free: " + s);
            }
            @Override public void releaseBystander() { s.release(1); }
            @Override public void holdRest() {
                long rest = s.availablePermits();
                if (!s.tryAcquire(rest)) fail("the blocker's permits are not free: " + s);
                blocked = rest;
            }
            private long blocked;
            @Override public void releaseRest() { s.release(blocked); }
            @Override public int queueLength() { return s.queueLength(); }
            @Override public void close() { s.close(); }
            @Override public boolean idle() { return s.availablePermits() == s.capacity() && s.queueLength() == 0; }
            @Override public boolean snippetHolds() { return s.availablePermits() < s.capacity() - 1; }
            @Override public String describe() { return s.toString(); }
        };
    }

    static Guarded of(Mutex m) {
        return new Guarded() {
            @Override public void holdBystander() { }
            @Override public void releaseBystander() { }
            @Override public void holdRest() {
                if (!m.tryLock()) fail("the blocker cannot lock " + m);
            }
            @Override public void releaseRest() { m.unlock(); }
            @Override public int queueLength() { return m.queueLength(); }
            @Override public void close() { m.close(); }
            @Override public boolean idle() { return !m.isLocked() && m.queueLength() == 0; }
            @Override public boolean snippetHolds() { return m.isLocked(); }
            @Override public String describe() { return m.toString(); }
        };
    }

    /**
     * A read-write lock; with {@code bystander}, a reader holds a read lock across the scenario
     * (so a snippet that read-unlocks twice is caught; only for snippets that read).
     */
    static Guarded of(RwLock l, boolean bystander) {
        return new Guarded() {
            private boolean reading;
            @Override public void holdBystander() {
                if (bystander) {
                    if (!l.tryReadLock()) fail("the bystander cannot read-lock " + l);
                    reading = true;
                }
            }
            @Override public void releaseBystander() {
                if (reading) l.readUnlock();
                reading = false;
            }
            @Override public void holdRest() {
                releaseBystander(); // the blocker holds the write lock instead
                if (!l.tryWriteLock()) fail("the blocker cannot write-lock " + l);
            }
            @Override public void releaseRest() { l.writeUnlock(); }
            @Override public int queueLength() { return l.queueLength(); }
            @Override public void close() { l.close(); }
            @Override public boolean idle() {
                return !l.isWriteLocked() && l.readLockCount() == 0 && l.queueLength() == 0;
            }
            @Override public boolean snippetHolds() {
                return l.isWriteLocked() || l.readLockCount() > (reading ? 1 : 0);
            }
            @Override public String describe() { return l.toString(); }
        };
    }

    /**
     * Runs {@code call} to {@code ending} and returns what it returned (the value of its stage, if
     * it returned one), or throws what it threw (unwrapped from the stage's wrappers). Afterwards
     * the bystander releases, and the primitive must be idle again.
     */
    static Object run(Guarded guarded, Ending ending, Callable<?> call) throws Throwable {
        guarded.holdBystander();
        try {
            if (ending != Ending.ACQUISITION_FAILS) {
                return settle(call.call());
            }
            guarded.holdRest();
            CompletableFuture<Object> result = new CompletableFuture<>();
            Thread caller = new Thread(() -> {
                try {
                    Object value = call.call();
                    if (value instanceof CompletionStage<?> stage) {
                        stage.whenComplete((v, e) -> {
                            if (e != null) result.completeExceptionally(e); else result.complete(v);
                        });
                    } else {
                        result.complete(value);
                    }
                } catch (Throwable e) {
                    result.completeExceptionally(e);
                }
            }, "snippet caller");
            caller.start();
            while (guarded.queueLength() == 0 && !result.isDone()) {
                Thread.sleep(1); // until the snippet waits (or did not need to)
            }
            guarded.close();
            guarded.releaseRest();
            try {
                return settle(result);
            } finally {
                caller.join(TimeUnit.MINUTES.toMillis(1));
            }
        } finally {
            guarded.releaseBystander(); // throws if the snippet released the bystander's permits
            for (int i = 0; !guarded.idle() && i < 60_000; i++) {
                Thread.sleep(1); // an asynchronous release may land just after the result completes
            }
            if (!guarded.idle()) fail("not everything came back: " + guarded.describe());
        }
    }

    /** The value of {@code value}, or of the stage it is; failures unwrapped and rethrown. */
    static Object settle(Object value) throws Throwable {
        if (!(value instanceof CompletionStage<?> stage)) {
            return value;
        }
        try {
            return stage.toCompletableFuture().get(1, TimeUnit.MINUTES);
        } catch (ExecutionException | CompletionException e) {
            throw unwrap(e);
        }
    }

    static Throwable unwrap(Throwable e) {
        while ((e instanceof ExecutionException || e instanceof CompletionException) && e.getCause() != null) {
            e = e.getCause();
        }
        return e;
    }

    /** Runs {@code call} and returns what it threw (unwrapped), or null. */
    static Throwable failureOf(Guarded guarded, Ending ending, Callable<?> call) {
        try {
            run(guarded, ending, call);
            return null;
        } catch (Throwable e) {
            return unwrap(e);
        }
    }

    /**
     * The usual expectation: success returns, a failed work throws its failure, a failed
     * acquisition throws {@link SemaphoreClosedException} and the work never ran.
     */
    static void expectUsual(Guarded guarded, Ending ending, Fakes.Work work, Callable<?> call) {
        work.guarded = guarded::snippetHolds;
        Throwable failure = failureOf(guarded, ending, call);
        assertFalse(work.ranUnguarded.get(), "the work ran while the snippet held nothing: released too early?");
        switch (ending) {
            case SUCCESS -> {
                assertNull(failure, () -> "failed: " + failure);
                assertEquals(1, work.runs.get(), "the work runs once");
            }
            case WORK_FAILS -> {
                assertInstanceOf(Fakes.WorkFailed.class, failure);
                assertEquals(1, work.runs.get(), "the work runs once");
            }
            case ACQUISITION_FAILS -> {
                assertInstanceOf(SemaphoreClosedException.class, failure);
                assertEquals(0, work.runs.get(), "no work without a grant");
            }
        }
        assertFalse(Thread.currentThread().isInterrupted());
    }
}
