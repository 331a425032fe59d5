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
 * to both ends. Thawing lets the buffered bytes through.
 */
final class FreezableProxy implements AutoCloseable {

    private final ServerSocket listener;
    private final int targetPort;
    private final Object gate = new Object();
    private volatile boolean frozen;
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

    /** Whether a connection through this proxy is open now (a client connects to one server at a time). */
    boolean connected() {
        for (Socket s : sockets) {
            if (!s.isClosed()) {
                return true;
            }
        }
        return false;
    }

    void freeze() {
        frozen = true;
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
