// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

/**
 * The calls to a {@link WaitListener}, each made after the core's lock is released, a throwing
 * listener reported and skipped.
 *
 * <pre>
 * Listener
 * --------
 * An optional WaitListener, final, set at construction. The fast paths never look at it. Under
 * the lock, a node that queues on a semaphore with a listener gets a Watch in its hook (the grant
 * hook it wraps, the queueing time, the queue length then, and later its failure): no field is
 * added to the node, nothing is allocated unless a listener is set and the node queues. Every
 * call to the listener happens after the lock is released: queued and rejected in enqueue;
 * settled in settleAll (the chain a release, growth, shrink or close settled, read before the
 * chain is woken) and in cancel (the withdrawn node, as TIMED_OUT or CANCELLED as the face says,
 * then its chain). A node leaves the queue exactly once, on exactly one of those paths, so each
 * queued node is settled exactly once. A listener that throws is reported like a waker.
 * </pre>
 */
final class ListenerCalls {

    private ListenerCalls() {}

    /** Tells the listener how each watched node of {@code chain} (linked by next, final) ended. */
    static void settled(WaitListener listener, Acquisition chain) {
        for (Acquisition a = chain; a != null; a = a.next) {
            NodeHook.Watch w = a.watched();
            if (w == null) {
                continue; // settled without queueing (an immediate grant, a close at the start)
            }
            tell(listener, a, w, outcomeOf(a, false));
        }
    }

    /**
     * How a settled node ended, as a listener hears it: by its state; a node that declined its
     * grant had a party that gave up, by a timeout if {@code timedOut} or if the node says so.
     */
    static WaitOutcome outcomeOf(Acquisition a, boolean timedOut) {
        switch (a.state) {
            case Acquisition.GRANTED:
                return WaitOutcome.GRANTED;
            case Acquisition.CLOSED:
                return WaitOutcome.CLOSED;
            case Acquisition.FAILED:
                return WaitOutcome.FAILED;
            default:
                return timedOut || a.declinedByTimeout() ? WaitOutcome.TIMED_OUT : WaitOutcome.CANCELLED;
        }
    }

    /** Tells the listener that a withdrawn node's wait ended. */
    static void withdrawn(WaitListener listener, Acquisition a, boolean timedOut) {
        NodeHook.Watch w = a.watched();
        if (w != null) {
            tell(listener, a, w, timedOut ? WaitOutcome.TIMED_OUT : WaitOutcome.CANCELLED);
        }
    }

    private static void tell(WaitListener listener, Acquisition a, NodeHook.Watch w, WaitOutcome outcome) {
        long weight = outcome == WaitOutcome.GRANTED ? a.permits : a.minimum();
        try {
            listener.settled(weight, outcome, System.nanoTime() - w.since, w.waitersAhead);
        } catch (Throwable t) {
            WakeRun.report(t);
        }
    }

    static void queued(WaitListener listener, long weight, int ahead) {
        try {
            listener.queued(weight, ahead);
        } catch (Throwable t) {
            WakeRun.report(t);
        }
    }

    static void rejected(WaitListener listener, long weight) {
        try {
            listener.rejected(weight);
        } catch (Throwable t) {
            WakeRun.report(t);
        }
    }

    /** {@link WaitListener#all}: each listener told in turn, a throwing one reported and skipped. */
    static final class AllListeners implements WaitListener {
        private final WaitListener[] listeners;

        AllListeners(WaitListener[] listeners) {
            this.listeners = listeners;
        }

        @Override
        public void attached(String name) {
            for (WaitListener l : listeners) {
                l.attached(name); // not caught: a refusal fails the build (see WaitListener.attached)
            }
        }

        @Override
        public void queued(long permits, int waitersAhead) {
            for (WaitListener l : listeners) {
                try {
                    l.queued(permits, waitersAhead);
                } catch (Throwable t) {
                    WakeRun.report(t);
                }
            }
        }

        @Override
        public void settled(long permits, WaitOutcome outcome, long waitNanos, int waitersAhead) {
            for (WaitListener l : listeners) {
                try {
                    l.settled(permits, outcome, waitNanos, waitersAhead);
                } catch (Throwable t) {
                    WakeRun.report(t);
                }
            }
        }

        @Override
        public void rejected(long permits) {
            for (WaitListener l : listeners) {
                try {
                    l.rejected(permits);
                } catch (Throwable t) {
                    WakeRun.report(t);
                }
            }
        }

        @Override
        public String toString() {
            return "WaitListener.all" + java.util.Arrays.toString(listeners);
        }
    }
}
