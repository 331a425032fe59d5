// SPDX-License-Identifier: Apache-2.0
package dev.handoff.zookeeper;

import org.apache.curator.framework.state.ConnectionState;

/**
 * Observes one {@link ZooKeeperSemaphore} object: its session, its leases, its reads of the
 * cluster queue and its grants. Register it with {@link ZooKeeperSemaphore#addListener}; every
 * method does nothing by default, so an implementation overrides only what it reports.
 *
 * <p><b>Threads.</b> Methods run on Curator's event thread, on the semaphore's timer thread, or on
 * the thread that read a lease's state, never while a lock of the semaphore is held, and may run
 * concurrently with each other. Keep them short and non-blocking. A listener that throws is logged
 * and does not stop the other listeners or the semaphore.
 *
 * <pre>{@code
 * budget.addListener(new ZooKeeperListener() {
 *     @Override
 *     public void leaseLost(Lease lease, String reason) {
 *         log.warn("lost {} permits: {}", lease.permits(), reason);
 *     }
 * });
 * }</pre>
 */
public interface ZooKeeperListener {

    /**
     * The Curator client's connection changed state ({@code SUSPENDED}, {@code RECONNECTED},
     * {@code LOST}, ...). While it is suspended no lease of this object is valid.
     *
     * @param state the new state, as Curator reports it
     */
    default void connectionChanged(ConnectionState state) {}

    /**
     * A lease stopped being valid for good while it was not released: its session was lost, its
     * node was deleted, or the local deadline passed before the leader confirmed the session. The
     * holder should stop the work the lease protects. Called once per lease; for a local front, for
     * the front's block (its local leases share its state).
     *
     * @param lease  the lease, now {@link Lease.State#LOST}
     * @param reason why, for a log line
     */
    default void leaseLost(Lease lease, String reason) {}

    /**
     * Reads of the cluster queue started failing (or the failure changed): they are
     * retried with a growing backoff. Called once per change of the failure, not once per retry.
     *
     * @param message what failed, naming the path and the error
     * @param attempts how many attempts have failed in a row so far
     */
    default void readsFailing(String message, int attempts) {}

    /**
     * Reads of the cluster queue succeed again after {@link #readsFailing}.
     *
     * @param attempts how many attempts had failed in a row
     */
    default void readsRecovered(int attempts) {}

    /**
     * A request of this object was granted.
     *
     * @param permits     the permits granted
     * @param waitNanos   from the call that asked to the grant, in nanoseconds
     * @param queueLength the requests in the cluster queue (granted and waiting, every client) in
     *                    the read that decided the grant
     */
    default void granted(long permits, long waitNanos, int queueLength) {}
}
