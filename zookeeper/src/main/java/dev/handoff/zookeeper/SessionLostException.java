// SPDX-License-Identifier: Apache-2.0
package dev.handoff.zookeeper;

/**
 * Fails a waiting request of a {@link ZooKeeperSemaphore} (or of its {@link LocalFront}) whose
 * ZooKeeper session was lost, or whose Curator client was closed, before the grant: the request's
 * ephemeral node is gone with the session, so its place in the queue is gone too. Nothing is held
 * by the caller when this is thrown; a new request joins the tail of the queue.
 */
public class SessionLostException extends IllegalStateException {
    private static final long serialVersionUID = 1L;

    /**
     * Creates the exception with a message that names the call and the path.
     *
     * @param message the detail message
     */
    public SessionLostException(String message) {
        super(message);
    }

    /**
     * Creates the exception with a message and the failure that revealed the loss.
     *
     * @param message the detail message
     * @param cause   Curator's or ZooKeeper's exception
     */
    public SessionLostException(String message, Throwable cause) {
        super(message, cause);
    }
}
