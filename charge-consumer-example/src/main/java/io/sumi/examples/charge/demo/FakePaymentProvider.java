package io.sumi.examples.charge.demo;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * An in-process payment provider with Stripe's idempotency rules, on the JDK's HTTP server:
 * {@code POST /v1/charges} with an {@code Idempotency-Key} header and form parameters.
 * <ul>
 *   <li>a new key charges (a "real charge") and remembers the parameters and the response;</li>
 *   <li>the same key with the same parameters replays the first response (header
 *   {@code Idempotent-Replayed: true}) and charges nothing;</li>
 *   <li>the same key with other parameters is refused with {@code 400}; a request without a key
 *   is refused with {@code 400} too (this provider insists on keys);</li>
 *   <li>{@link #failNext} makes the next requests fail with {@code 503} (an outage), before any key
 *   is looked at.</li>
 * </ul>
 * Thread-safe; requests with the same key are decided one at a time.
 */
public final class FakePaymentProvider implements AutoCloseable {

    private record Charge(String id, String parameters, String response) {}

    private final HttpServer server;
    private final Map<String, Charge> byKey = new ConcurrentHashMap<>();
    private final AtomicInteger requests = new AtomicInteger();
    private final AtomicInteger charges = new AtomicInteger();
    private final AtomicInteger replays = new AtomicInteger();
    private final AtomicInteger conflicts = new AtomicInteger();
    private final AtomicInteger outages = new AtomicInteger();
    private final AtomicInteger failNext = new AtomicInteger();
    private volatile int outageAfterCharges = -1;
    private volatile int outageLength;

    private FakePaymentProvider(HttpServer server) {
        this.server = server;
    }

    /** Starts a provider on a free port of 127.0.0.1. */
    public static FakePaymentProvider start() {
        try {
            HttpServer server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
            FakePaymentProvider provider = new FakePaymentProvider(server);
            server.createContext("/v1/charges", provider::handle);
            server.setExecutor(Executors.newFixedThreadPool(4, runnable -> {
                Thread thread = new Thread(runnable, "fake-payment-provider");
                thread.setDaemon(true);
                return thread;
            }));
            server.start();
            return provider;
        } catch (IOException ex) {
            throw new IllegalStateException("Could not start the fake payment provider", ex);
        }
    }

    public String url() {
        return "http://127.0.0.1:" + server.getAddress().getPort();
    }

    /** Fails the next {@code count} requests with 503. */
    public void failNext(int count) {
        failNext.set(count);
    }

    /** Once {@code charges} real charges were made, fails the next {@code length} requests with 503. */
    public void outageAfter(int charges, int length) {
        this.outageLength = length;
        this.outageAfterCharges = charges;
    }

    private void handle(HttpExchange exchange) throws IOException {
        try (exchange) {
            requests.incrementAndGet();
            if (!"POST".equals(exchange.getRequestMethod())) {
                respond(exchange, 405, "{\"error\":\"method not allowed\"}", false);
                return;
            }
            String parameters;
            try (InputStream body = exchange.getRequestBody()) {
                parameters = new String(body.readAllBytes(), StandardCharsets.UTF_8);
            }
            if (failNext.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
                outages.incrementAndGet();
                respond(exchange, 503, "{\"error\":\"service unavailable\"}", false);
                return;
            }
            String key = exchange.getRequestHeaders().getFirst("Idempotency-Key");
            if (key == null || key.isBlank()) {
                respond(exchange, 400, "{\"error\":\"an Idempotency-Key header is required\"}", false);
                return;
            }
            boolean[] created = {false};
            Charge charge = byKey.computeIfAbsent(key, k -> {
                created[0] = true;
                String id = "ch_" + charges.incrementAndGet();
                return new Charge(
                        id, parameters, "{\"id\":\"" + id + "\",\"object\":\"charge\",\"status\":\"succeeded\"}");
            });
            if (created[0]) {
                if (outageAfterCharges >= 0 && charges.get() >= outageAfterCharges) {
                    outageAfterCharges = -1;
                    failNext.set(outageLength);
                }
                respond(exchange, 200, charge.response(), false);
            } else if (!charge.parameters().equals(parameters)) {
                conflicts.incrementAndGet();
                respond(
                        exchange,
                        400,
                        "{\"error\":\"idempotency_error: key " + key + " was used with other parameters\"}",
                        false);
            } else {
                replays.incrementAndGet();
                respond(exchange, 200, charge.response(), true);
            }
        }
    }

    private static void respond(HttpExchange exchange, int status, String body, boolean replayed) throws IOException {
        byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
        exchange.getResponseHeaders().add("Content-Type", "application/json");
        if (replayed) {
            exchange.getResponseHeaders().add("Idempotent-Replayed", "true");
        }
        exchange.sendResponseHeaders(status, bytes.length);
        try (OutputStream out = exchange.getResponseBody()) {
            out.write(bytes);
        }
    }

    /** HTTP requests received, whatever their answer. */
    public int requests() {
        return requests.get();
    }

    /** Real charges: first requests of a key. */
    public int charges() {
        return charges.get();
    }

    /** Distinct idempotency keys seen. */
    public int uniqueKeys() {
        return byKey.size();
    }

    /** Requests answered with the first response of their key, without charging. */
    public int replays() {
        return replays.get();
    }

    /** Requests refused because their key came with other parameters. */
    public int conflicts() {
        return conflicts.get();
    }

    /** Requests refused with 503. */
    public int outages() {
        return outages.get();
    }

    @Override
    public void close() {
        server.stop(0);
    }
}
