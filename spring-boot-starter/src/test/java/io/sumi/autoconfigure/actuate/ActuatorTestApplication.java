package io.sumi.autoconfigure.actuate;

import io.sumi.testing.TestDatabase;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.test.context.DynamicPropertyRegistry;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * A web application with the starter and Actuator, on a PostgreSQL database of its own, for the
 * endpoint's HTTP tests; talked to over a real socket with the JDK's HTTP client.
 */
@SpringBootConfiguration
@EnableAutoConfiguration
class ActuatorTestApplication {

    static final String DATABASE = "sumi_actuator_http";

    static final JsonMapper JSON = JsonMapper.builder().build();

    static final HttpClient HTTP = HttpClient.newHttpClient();

    static void database(DynamicPropertyRegistry registry) {
        TestDatabase.POSTGRESQL.registerDataSource(DATABASE, registry::add);
        registry.add("spring.flyway.locations", () -> "classpath:db/sumi/{vendor}");
        // Three cached contexts share one PostgreSQL server with every other test run: few connections each.
        registry.add("spring.datasource.hikari.maximum-pool-size", () -> "3");
        // No broker in these tests: no dispatcher, no listeners.
        registry.add("sumi.outbox.dispatcher.enabled", () -> "false");
        registry.add("sumi.ledger.pruning.enabled", () -> "false");
        // The tests delete ledger rows between methods; a cache of completed keys would outlive them.
        registry.add("sumi.ledger.cache.enabled", () -> "false");
        registry.add("sumi.outbox.pruning.enabled", () -> "false");
    }

    record Response(int status, String body) {

        JsonNode json() {
            return JSON.readTree(body);
        }
    }

    static Response get(int port, String path) throws IOException, InterruptedException {
        HttpResponse<String> response = HTTP.send(
                HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
                        .GET()
                        .build(),
                HttpResponse.BodyHandlers.ofString());
        return new Response(response.statusCode(), response.body());
    }

    static Response post(int port, String path, String json) throws IOException, InterruptedException {
        HttpResponse<String> response = HTTP.send(
                HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
                        .header("Content-Type", "application/json")
                        .POST(HttpRequest.BodyPublishers.ofString(json))
                        .build(),
                HttpResponse.BodyHandlers.ofString());
        return new Response(response.statusCode(), response.body());
    }
}
