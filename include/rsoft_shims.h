/* SPDX-License-Identifier: GPL-2.0 */
/* C helpers for what bindgen cannot reach: macros and static inlines. */
#ifndef RSOFT_SHIMS_H
#define RSOFT_SHIMS_H

#include <linux/spinlock.h>
#include <linux/types.h>

/* module_param() is a macro: the parameters live on the C side. */
unsigned int rsoft_param_devices(void);
/* 0: qib, 1: hfi1, -EINVAL: anything else. */
int rsoft_param_provider(void);

/* spin_lock_init() and the irqsave variants are macros. */
void rsoft_spin_lock_init(spinlock_t *lock, const char *name,
			  struct lock_class_key *key);
unsigned long rsoft_spin_lock_irqsave(spinlock_t *lock);
void rsoft_spin_unlock_irqrestore(spinlock_t *lock, unsigned long flags);
/* What newer kernels' Rust lock backends must offer too. */
bool rsoft_spin_trylock_irqsave(spinlock_t *lock, unsigned long *flags);
void rsoft_spin_assert_held(spinlock_t *lock);

struct ib_device;
struct ib_umem;
struct page;

/*
 * Calls whose form differs between the kernels rsoft supports (the
 * RSOFT_HAVE_* probes of tools/kernel-features.sh): one form for the Rust side.
 */
struct ib_device *rsoft_alloc_ib_device(size_t size);
struct ib_umem *rsoft_umem_get(struct ib_device *dev, unsigned long addr,
			       size_t len, int access);

/* The sg page iterator and kmap_local_page() are macros / static inlines. */
size_t rsoft_umem_pages(struct ib_umem *umem, struct page **pages, size_t n);
void rsoft_copy_page(struct page *dst, size_t dst_off, struct page *src,
		     size_t src_off, size_t len);
void rsoft_page_write(struct page *dst, size_t off, const void *src, size_t len);
/* virt_addr_valid() and virt_to_page() are macros; NULL outside the linear map. */
struct page *rsoft_virt_to_page(unsigned long addr);
void rsoft_page_read(void *dst, struct page *src, size_t off, size_t len);
/* cond_resched() is a macro. */
void rsoft_cond_resched(void);
/* crc32_le() is a static inline on 7.x. */
u32 rsoft_crc32_le(u32 crc, const u8 *p, size_t len);

struct timer_list;

/* timer_setup() is a macro, jiffies arithmetic static inlines. */
void rsoft_timer_setup(struct timer_list *timer,
		       void (*fn)(struct timer_list *timer));
bool rsoft_timer_arm(struct timer_list *timer, u64 us);
bool rsoft_timer_cancel(struct timer_list *timer);
u64 rsoft_page_atomic(struct page *page, size_t off, bool cmp_swap, u64 operand,
		      u64 swap);

struct sk_buff;
struct nlattr;

/* nla_nest_start_noflag() and friends are static inlines. */
struct nlattr *rsoft_nl_driver_start(struct sk_buff *msg);
void rsoft_nl_driver_end(struct sk_buff *msg, struct nlattr *nest);
void rsoft_nl_driver_cancel(struct sk_buff *msg, struct nlattr *nest);

struct net_device;
struct notifier_block;

/* netif_running(), netif_carrier_ok() and dev_put() are static inlines. */
bool rsoft_netdev_up(const struct net_device *ndev);
unsigned int rsoft_netdev_mtu(const struct net_device *ndev);
unsigned long rsoft_netdev_net(const struct net_device *ndev);
void rsoft_netdev_hold(struct net_device *ndev);
void rsoft_netdev_put(struct net_device *ndev);
/* The EUI-64 of the netdev's MAC (addrconf_addr_eui48() is static inline). */
u64 rsoft_netdev_eui64(const struct net_device *ndev);
/* netdev_notifier_info_to_dev() is a static inline. */
struct net_device *rsoft_netdev_of(void *info);
int rsoft_netdev_notifier_register(struct notifier_block *nb);
void rsoft_netdev_notifier_unregister(struct notifier_block *nb);

/* get_device() and put_device() on an ib_device's struct device. */
void rsoft_ib_device_hold(struct ib_device *ibdev);
void rsoft_ib_device_unhold(struct ib_device *ibdev);

/*
 * alloc_percpu() and this_cpu_add() are macros. A set of @n u64 counters
 * per CPU, handed to Rust as an opaque pointer; the index is checked here.
 */
void *rsoft_percpu_alloc(unsigned int n);
void rsoft_percpu_free(void *set);
void rsoft_percpu_add(void *set, unsigned int n, unsigned int i, u64 v);
u64 rsoft_percpu_sum(void *set, unsigned int n, unsigned int i);

/*
 * An IPv4 packet of @len bytes from @saddr to @daddr out of @ndev, routed in
 * @ndev's namespace, its @len bytes (from the IP header on) at *@data for
 * the caller to fill; NULL without a route or memory. rsoft_ip4_send()
 * consumes it and returns 0 or an errno, from any context (with interrupts
 * off it is sent later, from a work item that rsoft_ip4_flush() waits
 * for); rsoft_skb_free() drops it unsent.
 */
struct sk_buff *rsoft_ip4_skb(struct net_device *ndev, __be32 saddr,
			      __be32 daddr, unsigned int len, u8 **data);
/* The same for IPv6, the 16-byte addresses in network byte order. */
struct sk_buff *rsoft_ip6_skb(struct net_device *ndev, const u8 *saddr,
			      const u8 *daddr, unsigned int len, u8 **data);
int rsoft_ip4_send(struct sk_buff *skb);
/*
 * How many RoCEv2 packets @ndev takes in one UDP GSO skb (1: none), and
 * rsoft_udp_train(), which marks @skb, whose UDP payload is packets of
 * @seg bytes each but a shorter last one, for the stack to cut up (it
 * leaves @skb as it is if that makes one packet).
 */
unsigned int rsoft_netdev_train_max(const struct net_device *ndev);
void rsoft_udp_train(struct sk_buff *skb, unsigned int seg);
/*
 * Whether @ndev's namespace routes a packet from GID @src to GID @dst (16
 * bytes each; IPv4 when both are IPv4-mapped), bound to @ndev as the core
 * resolves a destination's MAC, to this host (1) or out of a netdev (0); a
 * negative errno without a route, or for IPv6 with interrupts off.
 */
int rsoft_route_home(struct net_device *ndev, const u8 *src, const u8 *dst);
void rsoft_ip4_flush(void);
void rsoft_skb_free(struct sk_buff *skb);

/*
 * RoCEv2 reception: @handler gets every packet that reaches port 4791 of a
 * namespace where an rsoft link listens (rsoft_udp_open() on its netdev,
 * until rsoft_udp_close()), in softirq: @ctx, the netdev it came in on and
 * its bytes from the IP header on, which live for the call. Once
 * rsoft_udp_unregister() returns, it runs no more. Opening fails with
 * -EADDRINUSE where another listener (6.12's rxe, in init_net) has the port.
 */
typedef void (*rsoft_udp_handler_t)(void *ctx, struct net_device *ndev,
				    const u8 *pkt, size_t len);
int rsoft_udp_register(rsoft_udp_handler_t handler, void *ctx);
void rsoft_udp_unregister(void);
int rsoft_udp_open(struct net_device *ndev);
void rsoft_udp_close(struct net_device *ndev);

/*
 * Where the port is another listener's, @ndev's own RoCEv2 packets, taken
 * off it beside the IP stack, go to the same handler until
 * rsoft_tap_close() (which sleeps). An ERR_PTR on failure.
 */
struct rsoft_tap;
struct rsoft_tap *rsoft_tap_open(struct net_device *ndev);
void rsoft_tap_close(struct rsoft_tap *tap);

#endif /* RSOFT_SHIMS_H */
