package io.sumi.examples.charge;

import java.net.URLDecoder;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * One charge to make, as it travels on {@code payment.charge}: form-encoded, like the provider's
 * API takes it ({@code order=o-17&customer=c-3&amount=1250&currency=eur}).
 *
 * @param order the order being paid
 * @param customer the customer to charge
 * @param amount the amount in the currency's minor unit (cents)
 * @param currency ISO 4217, lower case
 */
public record ChargeRequest(String order, String customer, long amount, String currency) {

    /**
     * Reads a charge request from its {@code key=value&...} payload.
     *
     * @throws InvalidChargeRequestException if a field is missing or the amount is not a positive number
     */
    public static ChargeRequest parse(String payload) {
        Map<String, String> fields = new LinkedHashMap<>();
        for (String pair : payload.split("&", -1)) {
            int eq = pair.indexOf('=');
            if (eq > 0) {
                fields.put(
                        URLDecoder.decode(pair.substring(0, eq), StandardCharsets.UTF_8),
                        URLDecoder.decode(pair.substring(eq + 1), StandardCharsets.UTF_8));
            }
        }
        try {
            ChargeRequest request = new ChargeRequest(
                    required(fields, "order"),
                    required(fields, "customer"),
                    Long.parseLong(required(fields, "amount")),
                    required(fields, "currency"));
            if (request.amount() <= 0) {
                throw new InvalidChargeRequestException("amount must be positive: " + payload);
            }
            return request;
        } catch (NumberFormatException ex) {
            throw new InvalidChargeRequestException("amount is not a number: " + payload);
        }
    }

    private static String required(Map<String, String> fields, String name) {
        String value = fields.get(name);
        if (value == null || value.isBlank()) {
            throw new InvalidChargeRequestException("missing " + name);
        }
        return value;
    }

    /** The request as form fields, for the topic and for the provider. */
    public String toForm() {
        return "order=" + encode(order) + "&customer=" + encode(customer) + "&amount=" + amount + "&currency="
                + encode(currency);
    }

    private static String encode(String value) {
        return URLEncoder.encode(value, StandardCharsets.UTF_8);
    }
}
