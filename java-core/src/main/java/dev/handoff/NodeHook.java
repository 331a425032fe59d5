// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

import org.jspecify.annotations.Nullable;

/**
 * What a queue node keeps in its one {@code hook} field, and how to read it: the field holds
 * things that are never needed at the same time, so a node costs no extra field for them and
 * nothing is allocated unless it is needed.
 *
 * <ul>
 *   <li>{@code null}, or a {@link Runnable}: the face's bookkeeping, run under the core's lock right
 *       after a successful claim (the read-write lock's write flag);</li>
 *   <li>an {@link UpTo}: an up-to request's minimum (it has no bookkeeping), and its failure;</li>
 *   <li>a {@link Watch}: on a primitive with a {@link WaitListener}, a node that queued keeps the
 *       above wrapped with its queueing time, for the listener;</li>
 *   <li>a {@link Throwable}: once the node FAILED (a claim threw), if nothing above held it;</li>
 *   <li>an {@link Acquisition}: for an acquisition that a scheduler in front of the core started,
 *       the scheduler's own node whose state is this one's (see {@link Acquisition#node()}).</li>
 * </ul>
 */
final class NodeHook {

    private NodeHook() {}

    /** The least permits the node can be granted with: an up-to request's minimum, else {@code permits}. */
    static long minimum(@Nullable Object h, long permits) {
        if (h instanceof UpTo) {
            return ((UpTo) h).min;
        }
        if (h instanceof Watch) {
            long min = ((Watch) h).upToMinimum;
            if (min > 0) {
                return min;
            }
        }
        return permits;
    }

    /** The exception of a FAILED node; {@code null} otherwise. */
    static @Nullable Throwable failure(@Nullable Object h) {
        if (h instanceof Acquisition) {
            return ((Acquisition) h).failureCause(); // the node it stands behind
        }
        if (h instanceof Watch) {
            return ((Watch) h).failure;
        }
        if (h instanceof UpTo) {
            return ((UpTo) h).failure;
        }
        return h instanceof Throwable ? (Throwable) h : null;
    }

    /** The face's grant bookkeeping, or {@code null}. */
    static @Nullable Runnable grantHook(@Nullable Object h) {
        if (h instanceof Watch) {
            return ((Watch) h).onGrant;
        }
        return h instanceof UpTo ? null : (Runnable) h;
    }

    /** The hook of a node that fails with {@code t}: the failure is kept where the rest can still be read. */
    static Object failed(@Nullable Object h, Throwable t) {
        if (h instanceof Watch) {
            ((Watch) h).failure = t;
            return h;
        }
        if (h instanceof UpTo) {
            ((UpTo) h).failure = t; // the minimum stays readable for the messages and the listener
            return h;
        }
        return t; // the grant hook is not needed any more: the node keeps its failure here
    }

    /**
     * The hook of a node that queues on a primitive with a listener, behind {@code waitersAhead}
     * nodes: a {@link Watch} wrapping what it held, or the same one with the latest attempt's
     * time and place (a lock-free append that was retried).
     */
    static Watch watched(@Nullable Object h, int waitersAhead) {
        if (h instanceof Watch) {
            Watch w = (Watch) h;
            w.since = System.nanoTime();
            w.waitersAhead = waitersAhead;
            return w;
        }
        return h instanceof UpTo
                ? new Watch(null, ((UpTo) h).min, System.nanoTime(), waitersAhead)
                : new Watch((Runnable) h, 0L, System.nanoTime(), waitersAhead);
    }

    /** The {@link Watch} in the hook, or {@code null} if the node was never watched. */
    static @Nullable Watch watch(@Nullable Object h) {
        return h instanceof Watch ? (Watch) h : null;
    }

    /**
     * What a watched node keeps for its {@link WaitListener}: the grant hook it replaces in
     * the hook, the time it queued, the queue length then, and its failure if it fails.
     */
    static final class Watch {
        final Runnable onGrant;
        /** An up-to request's minimum, taken over from its {@link UpTo}; {@code 0} for an exact request. */
        final long upToMinimum;
        /** Written before the node is published to the queue (see {@link #watched}). */
        long since;

        int waitersAhead;
        /** Written under the owner's lock before the node's state is published. */
        Throwable failure;

        Watch(Runnable onGrant, long upToMinimum, long since, int waitersAhead) {
            this.onGrant = onGrant;
            this.upToMinimum = upToMinimum;
            this.since = since;
            this.waitersAhead = waitersAhead;
        }
    }

    /**
     * What an up-to request started by {@code startAcquisitionUpTo} keeps in
     * the hook: its minimum (its maximum is {@code permits} until the grant), and its failure
     * if it fails. Semaphore requests have no grant hook, so nothing else needs the field.
     */
    static final class UpTo {
        final long min;
        /** Written under the owner's lock before the node's state is published. */
        Throwable failure;

        UpTo(long min) {
            this.min = min;
        }
    }
}
