package io.sumi.consumer.http;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

import com.sun.net.httpserver.HttpServer;
import io.sumi.consumer.IdempotencyContext;
import io.sumi.consumer.IdempotencyMode;
import io.sumi.consumer.TestIdempotencyContexts;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.http.client.reactive.JdkClientHttpConnector;
import org.springframework.web.client.RestClient;
import org.springframework.web.client.RestTemplate;
import org.springframework.web.reactive.function.client.WebClient;

/**
 * The key reaches a real HTTP server through RestClient, RestTemplate and WebClient when the call
 * is made inside a handler, and nothing is added outside one.
 */
class HttpKeyPassthroughTests {

    /** What the provider stub saw: the Idempotency-Key header of each request, or "<none>". */
    final List<String> seenKeys = new CopyOnWriteArrayList<>();

    HttpServer provider;
    String baseUrl;

    @BeforeEach
    void startProvider() throws Exception {
        provider = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        provider.createContext("/charges", exchange -> {
            String key = exchange.getRequestHeaders().getFirst("Idempotency-Key");
            seenKeys.add(key == null ? "<none>" : key);
            byte[] body = "ok".getBytes(StandardCharsets.UTF_8);
            exchange.sendResponseHeaders(200, body.length);
            exchange.getResponseBody().write(body);
            exchange.close();
        });
        provider.start();
        baseUrl = "http://127.0.0.1:" + provider.getAddress().getPort();
    }

    @AfterEach
    void stopProvider() {
        provider.stop(0);
    }

    static TestIdempotencyContexts.Scope handler(String key) {
        return TestIdempotencyContexts.open(new IdempotencyContext(key, "payments", 1, IdempotencyMode.LEASE));
    }

    @Test
    void restClientCallsCarryTheKeyInsideAHandlerOnly() {
        RestClient client = RestClient.builder()
                .baseUrl(baseUrl)
                .requestInterceptor(new IdempotencyKeyInterceptor())
                .build();

        try (TestIdempotencyContexts.Scope scope = handler("order-17")) {
            client.post().uri("/charges").body("amount=10").retrieve().body(String.class);
        }
        client.post().uri("/charges").body("amount=10").retrieve().body(String.class);

        assertThat(seenKeys).containsExactly("order-17", "<none>");
    }

    @Test
    void restTemplateCallsCarryTheKeyInsideAHandlerOnly() {
        RestTemplate template = new RestTemplate();
        template.getInterceptors().add(new IdempotencyKeyInterceptor());

        try (TestIdempotencyContexts.Scope scope = handler("order-18")) {
            template.postForObject(baseUrl + "/charges", "amount=10", String.class);
        }
        template.postForObject(baseUrl + "/charges", "amount=10", String.class);

        assertThat(seenKeys).containsExactly("order-18", "<none>");
    }

    @Test
    void webClientCallsCarryTheKeyInsideAHandlerOnly() {
        WebClient client = WebClient.builder()
                .baseUrl(baseUrl)
                .clientConnector(new JdkClientHttpConnector())
                .filter(new IdempotencyKeyExchangeFilter())
                .build();

        try (TestIdempotencyContexts.Scope scope = handler("order-19")) {
            client.post()
                    .uri("/charges")
                    .bodyValue("amount=10")
                    .retrieve()
                    .bodyToMono(String.class)
                    .block();
        }
        client.post()
                .uri("/charges")
                .bodyValue("amount=10")
                .retrieve()
                .bodyToMono(String.class)
                .block();

        assertThat(seenKeys).containsExactly("order-19", "<none>");
    }

    @Test
    void aStepSuffixGivesEachCallOfAHandlerItsOwnKey() {
        RestClient charge = RestClient.builder()
                .baseUrl(baseUrl)
                .requestInterceptor(
                        new IdempotencyKeyInterceptor("Idempotency-Key", IdempotencyKeyFormat.suffixed("charge")))
                .build();
        RestClient receipt = RestClient.builder()
                .baseUrl(baseUrl)
                .requestInterceptor(
                        new IdempotencyKeyInterceptor("Idempotency-Key", IdempotencyKeyFormat.suffixed("receipt")))
                .build();

        try (TestIdempotencyContexts.Scope scope = handler("order-20")) {
            charge.post().uri("/charges").retrieve().body(String.class);
            receipt.post().uri("/charges").retrieve().body(String.class);
        }

        assertThat(seenKeys).containsExactly("order-20:charge", "order-20:receipt");
        assertThatIllegalArgumentException().isThrownBy(() -> IdempotencyKeyFormat.suffixed(" "));
    }

    @Test
    void aKeyTheCallerSetItselfIsKept() {
        RestClient client = RestClient.builder()
                .baseUrl(baseUrl)
                .requestInterceptor(new IdempotencyKeyInterceptor())
                .build();

        try (TestIdempotencyContexts.Scope scope = handler("order-21")) {
            client.post()
                    .uri("/charges")
                    .header("Idempotency-Key", "explicit")
                    .retrieve()
                    .body(String.class);
        }

        assertThat(seenKeys).containsExactly("explicit");
    }
}
