package io.sumi.examples.charge;

import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.springframework.http.MediaType;
import org.springframework.web.client.HttpClientErrorException;
import org.springframework.web.client.HttpServerErrorException;
import org.springframework.web.client.ResourceAccessException;
import org.springframework.web.client.RestClient;

/**
 * Charges cards through the provider's HTTP API ({@code POST /v1/charges}, form-encoded, as
 * Stripe's). The {@code Idempotency-Key} header is not set here: Sumi's interceptor, which the
 * starter adds to Boot's {@code RestClient.Builder}, puts the message key on every request made
 * inside an idempotent handler. A redelivered message therefore reaches the provider with the key
 * it had the first time, and the provider answers with the first charge instead of charging again.
 */
public class PaymentGateway {

    private static final Pattern ID = Pattern.compile("\"id\"\\s*:\\s*\"([^\"]+)\"");

    private final RestClient client;

    public PaymentGateway(RestClient client) {
        this.client = client;
    }

    /**
     * Charges the card once per message key (the interceptor adds the key to the request).
     *
     * @return the provider's charge id
     * @throws PaymentDeclinedException on a 4xx answer
     * @throws PaymentProviderUnavailableException on a 5xx answer or no answer
     */
    public String charge(ChargeRequest request) {
        String body;
        try {
            body = client.post()
                    .uri("/v1/charges")
                    .contentType(MediaType.APPLICATION_FORM_URLENCODED)
                    .body(request.toForm())
                    .retrieve()
                    .body(String.class);
        } catch (HttpClientErrorException ex) {
            throw new PaymentDeclinedException("The provider declined the charge of " + request.order() + ": "
                    + ex.getStatusCode() + " " + ex.getResponseBodyAsString());
        } catch (HttpServerErrorException | ResourceAccessException ex) {
            throw new PaymentProviderUnavailableException(
                    "The provider did not charge " + request.order() + ": " + ex.getMessage(), ex);
        }
        Matcher matcher = ID.matcher(body == null ? "" : body);
        if (!matcher.find()) {
            throw new PaymentProviderUnavailableException("The provider's answer has no charge id: " + body, null);
        }
        return matcher.group(1);
    }
}
