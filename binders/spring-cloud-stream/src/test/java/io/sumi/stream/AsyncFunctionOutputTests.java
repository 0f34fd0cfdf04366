package io.sumi.stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sumi.consumer.HandlerDefaults;
import io.sumi.consumer.IdempotentHandler;
import java.util.concurrent.CompletableFuture;
import java.util.function.Function;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.BeanCreationException;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * Issue 19, A2: a function whose output is asynchronous ({@code Function<T, Mono<R>>}) is refused
 * at start-up as docs/spring-cloud-stream.md says reactive functions are, instead of being wrapped
 * and having its ledger row completed when it returns, before its {@code Mono} has run.
 */
class AsyncFunctionOutputTests {

    private final IdempotentFunctionPostProcessor processor = new IdempotentFunctionPostProcessor(
            () -> {
                throw new AssertionError("no executor is needed to refuse a function");
            },
            HandlerDefaults::standard,
            StreamSettings::ofDefaults);

    static class MonoOutput implements Function<String, Mono<String>> {
        @Override
        @IdempotentHandler
        public Mono<String> apply(String input) {
            return Mono.just(input);
        }
    }

    static class FluxOutput implements Function<String, Flux<String>> {
        @Override
        @IdempotentHandler
        public Flux<String> apply(String input) {
            return Flux.just(input);
        }
    }

    static class FutureOutput implements Function<String, CompletableFuture<String>> {
        @Override
        @IdempotentHandler(storeReply = true)
        public CompletableFuture<String> apply(String input) {
            return CompletableFuture.completedFuture(input);
        }
    }

    static class PlainOutput implements Function<String, String> {
        @Override
        @IdempotentHandler
        public String apply(String input) {
            return input;
        }
    }

    @Test
    void aFunctionReturningAMonoIsRefusedAtStartUp() {
        assertThatThrownBy(() -> processor.postProcessAfterInitialization(new MonoOutput(), "quote"))
                .isInstanceOf(BeanCreationException.class)
                .hasMessageContaining("Invalid @IdempotentHandler")
                .hasMessageContaining("asynchronous function outputs (Mono) are not supported");
    }

    @Test
    void aFunctionReturningAFluxOrAFutureIsRefusedAtStartUp() {
        assertThatThrownBy(() -> processor.postProcessAfterInitialization(new FluxOutput(), "quotes"))
                .hasMessageContaining("(Flux) are not supported");
        // With storeReply, the kept reply would be the future object itself.
        assertThatThrownBy(() -> processor.postProcessAfterInitialization(new FutureOutput(), "later"))
                .hasMessageContaining("(CompletableFuture) are not supported");
    }

    /** The negative control: an imperative function is wrapped. */
    @Test
    void anImperativeFunctionIsWrapped() {
        Object wrapped = processor.postProcessAfterInitialization(new PlainOutput(), "plain");
        assertThat(wrapped.getClass().getSimpleName()).isEqualTo("IdempotentFunction");
    }
}
