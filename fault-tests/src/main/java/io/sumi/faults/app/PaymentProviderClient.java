package io.sumi.faults.app;

import org.springframework.http.MediaType;
import org.springframework.web.client.RestClient;

/**
 * Charges an order at the provider ({@code POST /charges}, the order id as the body). No
 * idempotency key is set here: inside an idempotent handler Sumi's interceptor adds it; outside
 * one (the negative control) the request goes without it.
 */
public class PaymentProviderClient {

    private final RestClient client;

    public PaymentProviderClient(RestClient client) {
        this.client = client;
    }

    /**
     * Charges the order; throws on any failure, so the record is retried.
     *
     * @return the provider's charge id
     */
    public String charge(String orderId) {
        return client.post()
                .uri("/charges")
                .contentType(MediaType.TEXT_PLAIN)
                .body(orderId)
                .retrieve()
                .body(String.class);
    }
}
