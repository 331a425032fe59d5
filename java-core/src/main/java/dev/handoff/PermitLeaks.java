// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.lang.ref.Cleaner;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;

/**
 * The leak detector of {@link LeakDetection}: a handle whose semaphore detects leaks gets its own
 * {@link Tracked} give-back, which notes the release, and is registered with a {@link Cleaner}
 * whose action is that same {@code Tracked} (it never refers to the handle, so the handle can
 * become unreachable). If the action runs before a release, the handle leaked.
 */
final class PermitLeaks {

    private PermitLeaks() {}

    /** The call sites already reported: each is reported once. */
    private static final Set<String> REPORTED = ConcurrentHashMap.newKeySet();

    /** Where reports go: the logger, or a test's sink. */
    static volatile @Nullable Consumer<String> sink;

    /** The cleaner, created at the first tracked handle (no thread while detection is off). */
    private static final class Holder {
        static final Cleaner CLEANER = Cleaner.create();
    }

    /** A new give-back for one handle acquired now, on {@code owner}, through {@code call}. */
    static Tracked track(LeakDetection mode, PermitHandles.GiveBack byCount, Object owner, String call) {
        return new Tracked(
                mode == LeakDetection.RELEASE, byCount, owner, new Throwable(call + " acquired the handle here"));
    }

    /** One handle's give-back and cleaning action. */
    static final class Tracked implements PermitHandles.GiveBack, Runnable {
        private final boolean giveBackLeaks;
        private final PermitHandles.GiveBack byCount;
        private final Object owner;
        private final Throwable site;
        /** The handle's permits, set by {@link #watch}. */
        private volatile long permits;

        private volatile boolean released;
        private volatile Cleaner.@Nullable Cleanable cleanable;

        Tracked(boolean giveBackLeaks, PermitHandles.GiveBack byCount, Object owner, Throwable site) {
            this.giveBackLeaks = giveBackLeaks;
            this.byCount = byCount;
            this.owner = owner;
            this.site = site;
        }

        /** Watches the handle that carries this give-back: from now on a leak of it is found. */
        Permits watch(Permits handle) {
            permits = handle.permits();
            cleanable = Holder.CLEANER.register(handle, this);
            return handle;
        }

        /** Watches the handle the future completes with, if it completes with one. */
        CompletableFuture<Permits> watch(CompletableFuture<Permits> future) {
            future.thenAccept(this::watch);
            return future;
        }

        @Override
        public void giveBack(long n) {
            released = true;
            Cleaner.Cleanable c = cleanable;
            if (c != null) {
                c.clean(); // deregisters; run() sees the release and does nothing
            }
            byCount.giveBack(n);
        }

        /** The cleaner's action: the handle is unreachable. */
        @Override
        public void run() {
            if (released) {
                return;
            }
            released = true;
            long n = permits;
            String held = byCount.describeHeld(n, owner); // before the give-back: what the handle held
            boolean given = false;
            if (giveBackLeaks) {
                try {
                    byCount.giveBack(n);
                    given = true;
                } catch (RuntimeException alreadyBack) { // released by count behind the handle's back
                    given = false;
                }
            }
            report(held, given);
        }

        /** The caller's frame: the first one below the face's acquire and this class. */
        private String callSite() {
            for (StackTraceElement e : site.getStackTrace()) {
                String c = e.getClassName();
                if (!isFace(c)) {
                    return e.toString();
                }
            }
            return "";
        }

        /** Whether {@code className} is this detector or a face that acquires a tracked handle. */
        private static boolean isFace(String className) {
            for (Class<?> face : FACES) {
                String f = face.getName();
                if (className.equals(f) || className.startsWith(f + "$")) {
                    return true;
                }
            }
            return false;
        }

        private static final Class<?>[] FACES = {
            PermitLeaks.class,
            FifoCore.class,
            SemaphoreBase.class,
            Semaphore.class,
            Mutex.class,
            RwLock.class,
            FairShareSemaphore.class,
            HandleAcquisition.class,
            WriteGrant.class,
            WriteFuture.class
        };

        private void report(String held, boolean given) {
            if (!REPORTED.add(callSite())) {
                return;
            }
            StringWriter trace = new StringWriter();
            site.printStackTrace(new PrintWriter(trace));
            String where = trace.toString();
            String message = "LEAK: a Permits handle of " + held + " became unreachable without release()"
                    + (given ? "; its permits were given back" : "; its permits stay held")
                    + " (reported once per call site). " + where;
            Consumer<String> s = sink;
            if (s != null) {
                s.accept(message);
            } else {
                System.getLogger("dev.handoff.leaks").log(System.Logger.Level.WARNING, message);
            }
        }
    }
}
