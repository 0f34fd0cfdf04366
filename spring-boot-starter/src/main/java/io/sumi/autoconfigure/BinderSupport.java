package io.sumi.autoconfigure;

import io.sumi.consumer.HandlerDefaults;
import org.springframework.aop.config.AopConfigUtils;
import org.springframework.beans.factory.support.BeanDefinitionRegistry;
import org.springframework.context.annotation.ImportBeanDefinitionRegistrar;
import org.springframework.core.type.AnnotationMetadata;

/** What the binders' auto-configurations share; free of any broker's classes. */
final class BinderSupport {

    private BinderSupport() {}

    /** The defaults of {@code @IdempotentHandler} methods, from {@code sumi.consumer.*}. */
    static HandlerDefaults defaults(SumiProperties properties) {
        SumiProperties.Consumer consumer = properties.consumer();
        return new HandlerDefaults(
                consumer.mode(),
                consumer.lease(),
                consumer.fingerprintMismatch(),
                consumer.keyHeaders(),
                consumer.maxReplyBytes());
    }

    /** Makes sure an auto-proxy creator exists (Spring Boot's AOP auto-configuration may be off). */
    static class AutoProxyRegistrar implements ImportBeanDefinitionRegistrar {
        @Override
        public void registerBeanDefinitions(AnnotationMetadata metadata, BeanDefinitionRegistry registry) {
            AopConfigUtils.registerAutoProxyCreatorIfNecessary(registry);
            AopConfigUtils.forceAutoProxyCreatorToUseClassProxying(registry);
        }
    }
}
