// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import org.jspecify.annotations.Nullable;

/**
 * A queue node that is also the caller's {@link Permits} handle once granted, so a wait allocates
 * no separate handle: the node of a blocking call ({@code ParkingAcquisition}), of
 * a future ({@code FutureAcquisition.Node}) and of the fair share ({@code FairShareTicket}).
 * It holds the face's release by count until the handle is released (see {@link PermitHandles}).
 */
abstract class HandleAcquisition extends Acquisition implements Permits {

    /**
     * The face's release by count until the handle is released, then null (see PermitHandles);
     * null from the start for a node whose caller gets no handle (a timed wait, a callback).
     */
    private volatile @Nullable Object back; // the GiveBack, the releasing thread, or null: see PermitHandles

    HandleAcquisition(FifoCore owner, long permits, @Nullable Runnable onGrant, PermitHandles.@Nullable GiveBack back) {
        super(owner, permits, onGrant);
        this.back = back;
    }

    /** The handle's release: the permits taken ({@link #permits()}), once. */
    @Override
    public final boolean release() {
        return PermitHandles.release(this, BACK, permits());
    }

    @Override
    public final boolean isReleased() {
        return PermitHandles.isReleased(back);
    }

    /**
     * For the leak detector, once granted and before the caller has the handle: puts a
     * {@link PermitLeaks.Tracked} in front of the face's give-back, which the handle then gives back
     * through. Null if the handle holds no give-back (a node whose caller gets no handle, or one
     * released already).
     */
    PermitLeaks.@Nullable Tracked track(LeakDetection mode, Object owner, String call) {
        Object b = BACK.getAcquire(this);
        if (!(b instanceof PermitHandles.GiveBack)) {
            return null;
        }
        PermitLeaks.Tracked t = PermitLeaks.track(mode, (PermitHandles.GiveBack) b, owner, call);
        return BACK.compareAndSet(this, b, t) ? t : null;
    }

    /** As a handle once granted ({@code "Permits[3, held]"}); as a waiting acquisition before. */
    @Override
    public final String toString() {
        return isGranted() ? PermitHandles.describe(permits(), isReleased()) : super.toString();
    }

    private static final VarHandle BACK;

    static {
        try {
            BACK = MethodHandles.lookup().findVarHandle(HandleAcquisition.class, "back", Object.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }
}
