package io.sumi.autoconfigure;

import io.sumi.consumer.HandlerDefaults;
import io.sumi.consumer.IdempotentExecutor;
import io.sumi.stream.IdempotentFunctionPostProcessor;
import io.sumi.stream.SumiStreamChannelInterceptor;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.config.BeanDefinition;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Role;
import org.springframework.integration.channel.interceptor.GlobalChannelInterceptorWrapper;

/**
 * {@code @IdempotentHandler} on Spring Cloud Stream functional beans, on any binder: the
 * post-processor that wraps annotated {@code Consumer} / {@code Function} beans, and the global
 * channel interceptor that shows them their message's headers and puts the key on what they send.
 * Active when Spring Cloud Stream and Sumi's binder for it are on the class path; each bean backs
 * off when the application defines its own.
 */
@AutoConfiguration(after = SumiAutoConfiguration.class)
@ConditionalOnClass(name = "org.springframework.cloud.stream.function.StreamBridge", value = IdempotentFunctionPostProcessor.class)
@EnableConfigurationProperties(SumiStreamProperties.class)
class SumiStreamAutoConfiguration {

    /** The name of the global channel interceptor bean; define a bean of this name to replace it. */
    static final String CHANNEL_INTERCEPTOR_BEAN_NAME = "sumiStreamChannelInterceptor";

    @Bean
    @Role(BeanDefinition.ROLE_INFRASTRUCTURE)
    @ConditionalOnMissingBean
    static IdempotentFunctionPostProcessor sumiIdempotentFunctionPostProcessor(ObjectProvider<IdempotentExecutor> executor,
            ObjectProvider<SumiProperties> properties, ObjectProvider<SumiStreamProperties> streamProperties) {
        // Static, and lazy where it can be: the executor (and with it the DataSource) is looked up
        // on the first message; the properties when the first annotated function bean is wrapped.
        return new IdempotentFunctionPostProcessor(executor::getObject, () -> defaults(properties.getObject()),
                () -> streamProperties.getObject().settings());
    }

    @Bean(name = CHANNEL_INTERCEPTOR_BEAN_NAME)
    @ConditionalOnMissingBean(name = CHANNEL_INTERCEPTOR_BEAN_NAME)
    GlobalChannelInterceptorWrapper sumiStreamChannelInterceptor(SumiStreamProperties properties) {
        return new SumiStreamChannelInterceptor(properties.settings().keyHeader()).asGlobalInterceptor();
    }

    static HandlerDefaults defaults(SumiProperties properties) {
        SumiProperties.Consumer consumer = properties.consumer();
        return new HandlerDefaults(consumer.mode(), consumer.lease(), consumer.fingerprintMismatch(), consumer.keyHeaders());
    }
}
