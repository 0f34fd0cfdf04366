package io.sumi.examples.charge.demo;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The demo's payment provider keeps Stripe's idempotency rules. */
class FakePaymentProviderTests {

    final FakePaymentProvider provider = FakePaymentProvider.start();
    final HttpClient http = HttpClient.newHttpClient();

    @AfterEach
    void stop() {
        provider.close();
    }

    HttpResponse<String> post(String key, String form) throws Exception {
        HttpRequest.Builder request = HttpRequest.newBuilder(URI.create(provider.url() + "/v1/charges"))
                .header("Content-Type", "application/x-www-form-urlencoded")
                .POST(HttpRequest.BodyPublishers.ofString(form));
        if (key != null) {
            request.header("Idempotency-Key", key);
        }
        return http.send(request.build(), HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void theSameKeyWithTheSameParametersReplaysTheFirstResponseWithoutCharging() throws Exception {
        HttpResponse<String> first = post("order-1", "amount=1250&currency=eur");
        HttpResponse<String> again = post("order-1", "amount=1250&currency=eur");

        assertThat(first.statusCode()).isEqualTo(200);
        assertThat(again.statusCode()).isEqualTo(200);
        assertThat(again.body()).isEqualTo(first.body()).contains("\"id\":\"ch_1\"");
        assertThat(again.headers().firstValue("Idempotent-Replayed")).contains("true");
        assertThat(provider.charges()).isEqualTo(1);
        assertThat(provider.replays()).isEqualTo(1);
        assertThat(provider.requests()).isEqualTo(2);
    }

    @Test
    void theSameKeyWithOtherParametersIsRefused() throws Exception {
        post("order-1", "amount=1250&currency=eur");

        HttpResponse<String> other = post("order-1", "amount=9999&currency=eur");

        assertThat(other.statusCode()).isEqualTo(400);
        assertThat(other.body()).contains("idempotency_error");
        assertThat(provider.charges()).isEqualTo(1);
        assertThat(provider.conflicts()).isEqualTo(1);
    }

    @Test
    void requestsWithoutAKeyAreRefusedAndAnOutageAnswers503() throws Exception {
        assertThat(post(null, "amount=1").statusCode()).isEqualTo(400);
        provider.failNext(2);
        assertThat(post("order-2", "amount=1").statusCode()).isEqualTo(503);
        assertThat(post("order-2", "amount=1").statusCode()).isEqualTo(503);
        assertThat(post("order-2", "amount=1").statusCode()).isEqualTo(200);
        assertThat(provider.outages()).isEqualTo(2);
        assertThat(provider.uniqueKeys()).isEqualTo(1);
    }
}
