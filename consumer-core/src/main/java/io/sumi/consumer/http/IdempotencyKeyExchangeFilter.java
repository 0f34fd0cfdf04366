package io.sumi.consumer.http;

import io.sumi.consumer.IdempotencyContext;
import java.util.Objects;
import org.springframework.web.reactive.function.client.ClientRequest;
import org.springframework.web.reactive.function.client.ClientResponse;
import org.springframework.web.reactive.function.client.ExchangeFilterFunction;
import org.springframework.web.reactive.function.client.ExchangeFunction;
import reactor.core.publisher.Mono;

/**
 * Adds the current message's idempotency key to {@code WebClient} requests
 * ({@code WebClient.builder().filter(…)}).
 *
 * <p>The key is read from the {@link IdempotencyContext} of the thread that subscribes to the
 * exchange: a handler that calls {@code block()} (or subscribes on its own thread) gets its key on
 * the request; a request subscribed on another thread carries no key. Outside a handler it adds
 * nothing; a request that already carries the header keeps its own value.
 */
public final class IdempotencyKeyExchangeFilter implements ExchangeFilterFunction {

    private final String headerName;
    private final IdempotencyKeyFormat format;

    /** Sends the plain key as {@value IdempotencyKeyInterceptor#DEFAULT_HEADER}. */
    public IdempotencyKeyExchangeFilter() {
        this(IdempotencyKeyInterceptor.DEFAULT_HEADER, IdempotencyKeyFormat.plain());
    }

    public IdempotencyKeyExchangeFilter(String headerName, IdempotencyKeyFormat format) {
        this.headerName = Objects.requireNonNull(headerName, "headerName");
        this.format = Objects.requireNonNull(format, "format");
    }

    @Override
    public Mono<ClientResponse> filter(ClientRequest request, ExchangeFunction next) {
        if (request.headers().containsHeader(headerName)) {
            return next.exchange(request);
        }
        return IdempotencyContext.find()
                .map(context -> next.exchange(ClientRequest.from(request)
                        .header(headerName, format.format(context))
                        .build()))
                .orElseGet(() -> next.exchange(request));
    }
}
