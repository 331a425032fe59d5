// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

import java.util.concurrent.Executor;
import java.util.concurrent.locks.LockSupport;

/*
 * The fair share's ticket
 * =======================
 * A ticket is one waiting request: a node bound to the core from its creation (so that its handle
 * and Acquisition.cancel() work, the cancel reaching the fair share through the core's Front
 * hook), queued in its key's FIFO until the scheduler dispatches it into the core's queue. Its
 * party is what waits: a Waker (callback, future), the Thread parked in a blocking call, or an
 * Acquisition started by startAcquisition (its own waker; its hook field points to the ticket, so
 * its isGranted/isClosed/failure read the ticket's state).
 *
 * Waking. A dispatched ticket settles only inside a call into the core, under the fair share's
 * lock. The core still calls the node's wake() (after its own lock, inside our call): that call
 * comes before handedOver is set and does nothing but note it (calledByCore). The scheduler puts
 * every settled ticket on its chain (SettledTickets), run after the fair share's lock is released;
 * that second wake() wakes the party. If the core deferred its wake() (a trampoline deeper than
 * MAX_NESTED_WAKES), that late call may come before or after the chain's: whichever comes first
 * wakes the party, once (partyWoken); a deferred one also tells the listener (tellOnWake), since
 * the ticket is then on the core's list of deferred wake-ups, not on the chain.
 */

/**
 * One waiting request of a {@link FairShareSemaphore}: the queue node and, for the blocking and
 * future faces, the {@link Permits} handle of the grant.
 */
final class FairShareTicket<K> extends HandleAcquisition {
    /** Where its settlement is reported to the listener. */
    private final SettledTickets<K> settled;
    /** A Waker (callback, future), the Thread parked in a blocking call, or a started Acquisition. */
    private final Object party;
    /** The key's state while it waits; null for a request settled without one (closed, 0 permits). */
    @GuardedBy("FairShareScheduler.lock")
    KeyState<K> key;
    /** Start tag, set when its key enters the heap with it at the head (see StartTags). */
    @GuardedBy("FairShareScheduler.lock")
    long tag;
    /** Arrival order: ties between equal tags go to the lower one. */
    @GuardedBy("FairShareScheduler.lock")
    long order;
    /** When it was queued, if a listener is told. */
    long since;
    /** Requests waiting when it was queued; -1 if never queued. */
    int ahead = -1;

    boolean timedOut;
    /** Set under the fair share's lock once settled by it; then wake() wakes the party, once. */
    boolean handedOver;
    /** Whether the core called wake() before the scheduler settled it (see settleDispatchedLocked). */
    boolean calledByCore;
    /** Whether wake() tells the listener (a wake-up the core deferred). */
    boolean tellOnWake;

    private boolean partyWoken;

    FairShareTicket(SettledTickets<K> settled, FifoCore core, long n, PermitHandles.GiveBack back, Object party) {
        super(core, n, null, back);
        this.settled = settled;
        this.party = party;
        // A user's Waker with a claim() of its own: user code, asked by the scheduler after its lock.
        this.claimsInFront =
                party instanceof Waker && !(party instanceof FairShareFuture) && WakerClaims.ownClaim((Waker) party);
        // A future or a started acquisition learns its ticket here, before the ticket can settle.
        if (party instanceof FairShareFuture) {
            ((FairShareFuture) party).ticket = this;
        } else if (party instanceof Acquisition) {
            ((Acquisition) party).hook = this; // its state is the ticket's from now on (Acquisition.node())
        }
    }

    /** A node the fair share linked, as the ticket it is (every such node is one of its tickets). */
    @SuppressWarnings("unchecked")
    static <K> FairShareTicket<K> of(Acquisition a) {
        return (FairShareTicket<K>) a;
    }

    @Override
    protected boolean claim() {
        if (claimsInFront) {
            return true; // the grant is taken for the party, whose own claim() is asked later
        }
        Object p = party;
        if (p instanceof Acquisition) {
            return ((Acquisition) p).claim(); // started by startAcquisition: the acquisition is its own waker
        }
        return !(p instanceof Waker) || ((Waker) p).claim();
    }

    /**
     * The party's own {@link Waker#claim()}, for a ticket that {@link #claimsInFront}: asked by the
     * scheduler after its lock, on the thread of the call that made the grant.
     */
    boolean claimOfParty() {
        return ((Waker) party).claim();
    }

    /** Under the fair share's lock, at a grant of this queued ticket: whether its party asks for a provisional one. */
    boolean asksProvisionalGrant() {
        if (!(party instanceof Acquisition)) {
            return false;
        }
        try {
            return ((Acquisition) party).provisionalGrant();
        } catch (Throwable t) {
            return false;
        }
    }

    @Override
    boolean parksThread() {
        return party instanceof Thread;
    }

    @Override
    protected void wake() {
        // The core's own call (inside a call of the fair share) comes before handedOver and does
        // nothing; the chain's comes after it. A deferred call of the core may come after the
        // chain's: partyWoken makes the party's wake-up happen once.
        if (!handedOver) {
            calledByCore = true; // the core's call, inside a call of the fair share under its lock
            return;
        }
        if (partyWoken) {
            return;
        }
        partyWoken = true;
        if (tellOnWake) {
            settled.reportSettled(this);
        }
        if (party instanceof Thread) {
            if (party != Thread.currentThread()) {
                LockSupport.unpark((Thread) party);
            }
        } else if (party instanceof Acquisition) {
            ((Acquisition) party).wake();
        } else {
            ((Waker) party).wake();
        }
    }

    @Override
    boolean declinedByTimeout() {
        Object p = party;
        return p instanceof FairShareFuture
                ? ((FairShareFuture) p).timedOut()
                : p instanceof Acquisition && ((Acquisition) p).declinedByTimeout();
    }

    void withdraw(boolean timedOut, Executor wakes) {
        if (timedOut) {
            cancelTimedOut(wakes);
        } else {
            cancel();
        }
    }
}
