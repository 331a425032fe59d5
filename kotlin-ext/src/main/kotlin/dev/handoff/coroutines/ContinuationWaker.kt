package dev.handoff.coroutines

import dev.handoff.Acquisition
import dev.handoff.Waker
import kotlinx.coroutines.CancellableContinuation
import kotlinx.coroutines.InternalCoroutinesApi
import kotlinx.coroutines.suspendCancellableCoroutine
import kotlin.coroutines.CoroutineContext
import kotlin.coroutines.resumeWithException

/*
 * Implementation notes
 * ====================
 *
 * A suspended acquisition is the core's callback primitive, `acquire(n, waker)`, with a coroutine
 * behind the waker. One object of this class plays three parts, so the slow path allocates only
 * it, the core's queue node and what kotlinx itself needs for a cancellable suspension:
 *
 *   - the Waker the core settles;
 *   - the continuation's cancellation handler, `(Throwable?) -> Unit`, which withdraws the wait;
 *   - the `onCancellation` of the claimed resumption, `(Throwable, Unit, CoroutineContext) -> Unit`,
 *     which gives granted permits back if the coroutine is cancelled before it runs again.
 *
 * Exactly one of grant, close and cancel wins
 * -------------------------------------------
 * The core decides a grant under its lock and asks claim() first. claim() calls
 * `tryResume(Unit, null, onCancellation)`, one CAS on the continuation's state:
 *   - it fails (returns null) iff the continuation was already cancelled. Then claim() declines,
 *     the core counts the acquisition as cancelled and hands its permits on in the same release.
 *     The cancellation handler runs too (it may already have run); its Acquisition.cancel() finds
 *     the acquisition settled and does nothing. No permit is held by a party that cannot use it.
 *   - it succeeds: from now on the continuation owns the permits. The token is kept and wake(),
 *     which the core calls once its lock is released, completes the resumption (dispatch). If the
 *     coroutine is cancelled between claim and the moment it runs again, kotlinx's prompt
 *     cancellation makes the suspension throw CancellationException and calls onCancellation,
 *     which releases the permits; the cancellation handler's Acquisition.cancel() returns false.
 *     A subclass may note the grant in claimed(), still under the core's lock (the kotlinx mutex
 *     view stores its owner token there, so the owner is known from the grant on).
 * Cancellation while waiting runs the cancellation handler: Acquisition.cancel() removes the node
 * and hands its partially assigned permits to the waiters behind it; the waker is never called.
 * Close calls wake() without claim(): there is no token, so the continuation is resumed with
 * SemaphoreClosedException (ignored by kotlinx if the coroutine was cancelled first).
 *
 * Settling inside acquire(n, waker)
 * ---------------------------------
 * The core may settle the acquisition before acquire() returns (a grant at once, or closed), on
 * the calling thread, inside the suspendCancellableCoroutine block. That is an ordinary resumption
 * before suspension for kotlinx. The cancellation handler needs the Acquisition, so it is
 * installed only after acquire() returned, and only if the acquisition may still be waiting;
 * kotlinx runs it at once if the coroutine was cancelled in the meantime.
 *
 * Threads
 * -------
 * claim() and wake() of one grant run on the same thread (the one whose acquire, release or
 * cancel resolved it: claim under the core's lock, wake after it), so `resumeToken` needs no
 * volatile. `acquisition` is written before the handler is installed; kotlinx's CAS that installs
 * the handler publishes it to the thread that later cancels.
 */

/**
 * The waker of one suspended acquisition: see the implementation notes above. Subclasses say how
 * to start the acquisition on the core and how to give back what a cancelled coroutine was granted;
 * [await] does the rest. One instance per suspension; not reusable.
 */
@OptIn(InternalCoroutinesApi::class)
internal abstract class ContinuationWaker :
    Waker,
    (Throwable?) -> Unit,
    (Throwable, Unit, CoroutineContext) -> Unit {

    /** Set once at the start of [await], before the core can see this waker. */
    private lateinit var continuation: CancellableContinuation<Unit>

    /** The core's handle; set after `start()` returned, read by the cancellation handler. */
    private var acquisition: Acquisition? = null

    /** The token of a successful claim; written in [claim], read in [wake] on the same thread. */
    private var resumeToken: Any? = null

    /** Starts the acquisition on the core with this waker, e.g. `semaphore.acquire(n, this)`. */
    protected abstract fun start(): Acquisition

    /** Returns the permits of a grant that the cancelled coroutine never got to use. */
    protected abstract fun giveBack()

    /** The exception for a closed semaphore, naming the call. */
    protected abstract fun closedException(): Throwable

    /**
     * Runs in [claim] once the grant is this coroutine's, under the core's lock and before any
     * waker runs: a short non-blocking step (a field store) that must not call back into the core.
     * The kotlinx mutex view records its owner token here, as kotlinx does at its own grant.
     */
    protected open fun claimed() {}

    /**
     * Suspends until the acquisition started by [start] is granted (returns), closed (throws what
     * [closedException] makes) or cancelled with the coroutine (throws CancellationException;
     * nothing is held). Arguments must have been checked: an exception from [start] would leave
     * the continuation behind.
     *
     * Call it as `await<Unit>()`. The type parameter is only there for the bytecode: inlining
     * `suspendCancellableCoroutine<Unit>` across modules makes the compiler coerce the result to
     * `Unit` and give this function a state machine (one more allocation per suspension); with an
     * erased `T` it stays a plain tail call. The result is always `Unit`.
     */
    suspend fun <T> await(): T = suspendCancellableCoroutine<T> { cont ->
        @Suppress("UNCHECKED_CAST") // T is Unit at every call site; the value resumed is Unit
        continuation = cont as CancellableContinuation<Unit>
        val a = start()
        if (!a.isGranted && !a.isClosed) {
            acquisition = a
            cont.invokeOnCancellation(this)
        }
    }

    /** Under the core's lock: take the grant iff the coroutine is not cancelled. One CAS. */
    final override fun claim(): Boolean {
        val token = continuation.tryResume(Unit, null, this) ?: return false
        resumeToken = token
        claimed()
        return true
    }

    /** After the core's lock: run the coroutine (granted), or fail it (closed). */
    final override fun wake() {
        val token = resumeToken
        if (token != null) {
            continuation.completeResume(token)
        } else {
            continuation.resumeWithException(closedException())
        }
    }

    /** The continuation's cancellation handler: withdraw the wait if it still waits. */
    final override fun invoke(cause: Throwable?) {
        acquisition?.cancel()
    }

    /** `onCancellation` of a claimed grant: cancelled before it ran again, so give back. */
    final override fun invoke(cause: Throwable, value: Unit, context: CoroutineContext) {
        giveBack()
    }
}
