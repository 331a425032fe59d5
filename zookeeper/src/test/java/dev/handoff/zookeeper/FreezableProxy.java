// SPDX-License-Identifier: Apache-2.0
package dev.handoff.zookeeper;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A TCP proxy before one server that can be frozen: while frozen it forwards no byte in either
 * direction (and new connections wait), as a network partition or a stopped process would look
 * to both ends. Thawing lets the buffered bytes through. It can also be slowed: every chunk of
 * bytes waits a given delay before it is passed on, in each direction, as over a long or
 * congested link (bytes that arrive meanwhile go with the next chunk, so the delay adds latency
 * without limiting throughput much).
 */
final class FreezableProxy implements AutoCloseable {

    private final ServerSocket listener;
    private final int targetPort;
    private final Object gate = new Object();
    private volatile boolean frozen;
    /** Milliseconds each chunk waits before it is forwarded; 0: none. */
    private volatile long delayMs;

    private volatile boolean closed;
    private final List<Socket> sockets = new CopyOnWriteArrayList<>();

    FreezableProxy(int targetPort) throws IOException {
        this.targetPort = targetPort;
        this.listener = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        Thread acceptor = new Thread(this::accept, "proxy-accept-" + listener.getLocalPort());
        acceptor.setDaemon(true);
        acceptor.start();
    }

    String connectString() {
        return "127.0.0.1:" + listener.getLocalPort();
    }

    /** Closes the connections open through this proxy, as a reset by the network would; new ones may follow. */
    void reset() {
        for (Socket s : sockets) {
            closeQuietly(s);
        }
    }

    void freeze() {
        frozen = true;
    }

    /** Delays every chunk by delayMs in each direction from now on; 0 ends the delay. */
    void slow(long delayMs) {
        this.delayMs = delayMs;
    }

    void thaw() {
        synchronized (gate) {
            frozen = false;
            gate.notifyAll();
        }
    }

    private void awaitThawed() throws InterruptedException {
        synchronized (gate) {
            while (frozen && !closed) {
                gate.wait(100);
            }
        }
    }

    private void accept() {
        while (!closed) {
            try {
                Socket client = listener.accept();
                awaitThawed();
                Socket server = new Socket(InetAddress.getLoopbackAddress(), targetPort);
                sockets.add(client);
                sockets.add(server);
                pump(client, server);
                pump(server, client);
            } catch (IOException | InterruptedException e) {
                if (closed) {
                    return;
                }
            }
        }
    }

    private void pump(Socket from, Socket to) {
        Thread t = new Thread(
                () -> {
                    byte[] buffer = new byte[8192];
                    try (InputStream in = from.getInputStream();
                            OutputStream out = to.getOutputStream()) {
                        int n;
                        while ((n = in.read(buffer)) >= 0) {
                            long delay = delayMs;
                            if (delay > 0) {
                                Thread.sleep(delay);
                            }
                            awaitThawed();
                            out.write(buffer, 0, n);
                            out.flush();
                        }
                    } catch (IOException | InterruptedException e) {
                        // the connection ended
                    } finally {
                        closeQuietly(from);
                        closeQuietly(to);
                    }
                },
                "proxy-pump");
        t.setDaemon(true);
        t.start();
    }

    private static void closeQuietly(Socket s) {
        try {
            s.close();
        } catch (IOException ignored) {
            // closing
        }
    }

    @Override
    public void close() throws IOException {
        closed = true;
        thaw();
        listener.close();
        for (Socket s : sockets) {
            closeQuietly(s);
        }
    }
}
