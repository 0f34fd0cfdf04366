package io.sumi.faults.driver;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The payment provider, in the driver's JVM (the JDK's HTTP server). {@code POST /charges} with
 * the order id as body charges the order, unless the request's {@code Idempotency-Key} was seen
 * before: then it answers with the first charge and charges nothing, as Stripe does. Counts real
 * charges per order and requests per key.
 */
final class PaymentProvider implements AutoCloseable {

    static final String KEY_HEADER = "Idempotency-Key";

    private final HttpServer server;
    private final ExecutorService executor = Executors.newFixedThreadPool(8);
    private final Map<String, String> orderByKey = new ConcurrentHashMap<>();
    private final Map<String, AtomicInteger> requestsByKey = new ConcurrentHashMap<>();
    private final Map<String, AtomicInteger> realChargesByOrder = new ConcurrentHashMap<>();
    private final Set<String> keysOnTwoOrders = ConcurrentHashMap.newKeySet();
    private final AtomicLong requests = new AtomicLong();
    private final AtomicLong keylessRequests = new AtomicLong();
    private final AtomicLong charges = new AtomicLong();

    PaymentProvider() {
        // Without TCP_NODELAY the server's separate header and body writes meet the client's delayed
        // ACK: ~40 ms per request, which would make the provider, not Sumi, the bottleneck. Read
        // once, when the JDK's HTTP server is first used.
        System.setProperty("sun.net.httpserver.nodelay", "true");
        try {
            server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 64);
        } catch (IOException ex) {
            throw new UncheckedIOException(ex);
        }
        server.createContext("/charges", this::charge);
        server.setExecutor(executor);
        server.start();
    }

    private void charge(HttpExchange exchange) throws IOException {
        try (exchange) {
            String order = new String(exchange.getRequestBody().readAllBytes(), StandardCharsets.UTF_8).trim();
            String key = exchange.getRequestHeaders().getFirst(KEY_HEADER);
            requests.incrementAndGet();
            boolean real;
            if (key == null || key.isBlank()) {
                keylessRequests.incrementAndGet();
                real = true;
            } else {
                requestsByKey.computeIfAbsent(key, k -> new AtomicInteger()).incrementAndGet();
                String first = orderByKey.putIfAbsent(key, order);
                real = first == null;
                if (first != null && !first.equals(order)) {
                    keysOnTwoOrders.add(key);
                }
            }
            if (real) {
                realChargesByOrder
                        .computeIfAbsent(order, o -> new AtomicInteger())
                        .incrementAndGet();
                charges.incrementAndGet();
            }
            byte[] body = ("{\"id\":\"ch_" + (key == null ? order : key) + "\"}").getBytes(StandardCharsets.UTF_8);
            exchange.getResponseHeaders().add("Content-Type", "application/json");
            exchange.sendResponseHeaders(200, body.length);
            exchange.getResponseBody().write(body);
        }
    }

    String baseUrl() {
        return "http://127.0.0.1:" + server.getAddress().getPort();
    }

    /** Real charges of an order (0 if never charged). */
    int realCharges(String order) {
        AtomicInteger count = realChargesByOrder.get(order);
        return count == null ? 0 : count.get();
    }

    Map<String, AtomicInteger> realChargesByOrder() {
        return realChargesByOrder;
    }

    int requestsFor(String key) {
        AtomicInteger count = requestsByKey.get(key);
        return count == null ? 0 : count.get();
    }

    long requests() {
        return requests.get();
    }

    long keylessRequests() {
        return keylessRequests.get();
    }

    long charges() {
        return charges.get();
    }

    /** Keys sent with two different orders: a key collision, never expected. */
    Set<String> keysOnTwoOrders() {
        return keysOnTwoOrders;
    }

    @Override
    public void close() {
        server.stop(0);
        executor.shutdownNow();
    }
}
