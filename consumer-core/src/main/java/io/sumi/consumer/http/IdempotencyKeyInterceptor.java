package io.sumi.consumer.http;

import io.sumi.consumer.IdempotencyContext;
import java.io.IOException;
import java.util.Objects;
import java.util.Optional;
import org.springframework.http.HttpRequest;
import org.springframework.http.client.ClientHttpRequestExecution;
import org.springframework.http.client.ClientHttpRequestInterceptor;
import org.springframework.http.client.ClientHttpResponse;

/**
 * Adds the current message's idempotency key to every request made from inside an idempotent
 * handler, for {@code RestClient} ({@code RestClient.builder().requestInterceptor(…)}) and
 * {@code RestTemplate} ({@code restTemplate.getInterceptors().add(…)}).
 *
 * <p>Outside a handler (no {@link IdempotencyContext} on the calling thread) it adds nothing. A
 * request that already carries the header keeps its own value. Thread-safe.
 */
public final class IdempotencyKeyInterceptor implements ClientHttpRequestInterceptor {

    /** The header Stripe and most payment and mail providers read. */
    public static final String DEFAULT_HEADER = "Idempotency-Key";

    private final String headerName;
    private final IdempotencyKeyFormat format;

    /** Sends the plain key as {@value #DEFAULT_HEADER}. */
    public IdempotencyKeyInterceptor() {
        this(DEFAULT_HEADER, IdempotencyKeyFormat.plain());
    }

    public IdempotencyKeyInterceptor(String headerName, IdempotencyKeyFormat format) {
        this.headerName = Objects.requireNonNull(headerName, "headerName");
        this.format = Objects.requireNonNull(format, "format");
    }

    /** The key to send on the current thread, if a handler is running on it. */
    Optional<String> currentKey() {
        return IdempotencyContext.find().map(format::format);
    }

    @Override
    public ClientHttpResponse intercept(HttpRequest request, byte[] body, ClientHttpRequestExecution execution)
            throws IOException {
        if (!request.getHeaders().containsHeader(headerName)) {
            currentKey().ifPresent(key -> request.getHeaders().set(headerName, key));
        }
        return execution.execute(request, body);
    }

    /** The header this interceptor writes. */
    public String headerName() {
        return headerName;
    }
}
