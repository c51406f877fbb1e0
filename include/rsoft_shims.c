// SPDX-License-Identifier: GPL-2.0
/* C helpers for what bindgen cannot reach: macros and static inlines. */

#include <linux/sched.h>
#include <linux/crc32.h>
#include <linux/highmem.h>
#include <linux/llist.h>
#include <linux/moduleparam.h>
#include <linux/netdevice.h>
#include <linux/percpu.h>
#include <linux/unaligned.h>
#include <net/addrconf.h>
#include <net/gso.h>
#include <net/netns/generic.h>
#include <net/udp.h>
#include <net/udp_tunnel.h>
#include <rdma/ib_verbs.h>
#include <net/ip.h>
#include <net/ipv6.h>
#include <net/ip6_checksum.h>
#include <net/route.h>
#include <linux/scatterlist.h>
#include <linux/timer.h>
#include <linux/workqueue.h>
#include <net/net_namespace.h>
#include <net/netlink.h>
#include <rdma/ib_umem.h>
#include <rdma/rdma_netlink.h>

#include "rsoft_shims.h"

/* Here rather than in module!, whose key for it differs between kernels. */
MODULE_AUTHOR("rsoft developers");

static unsigned int devices;
module_param(devices, uint, 0444);
MODULE_PARM_DESC(devices, "Number of InfiniBand-mode rsoft devices to register (0-16, default 0; RoCE devices come from 'rdma link add')");
/* 'rdma link add NAME type rsoft netdev DEV' loads the module on demand. */
MODULE_ALIAS_RDMA_LINK("rsoft");

unsigned int rsoft_param_devices(void)
{
	return devices;
}

static char *provider = "qib";
module_param(provider, charp, 0444);
MODULE_PARM_DESC(provider, "Stock rdma-core provider that opens the devices: qib (libipathverbs, default) or hfi1 (libhfi1verbs)");

int rsoft_param_provider(void)
{
	if (sysfs_streq(provider, "qib"))
		return 0;
	if (sysfs_streq(provider, "hfi1"))
		return 1;
	return -EINVAL;
}

void rsoft_spin_lock_init(spinlock_t *lock, const char *name,
			  struct lock_class_key *key)
{
#ifdef CONFIG_DEBUG_SPINLOCK
	__raw_spin_lock_init(spinlock_check(lock), name, key, LD_WAIT_CONFIG);
#else
	spin_lock_init(lock);
#endif
}

struct ib_device *rsoft_alloc_ib_device(size_t size)
{
#ifdef RSOFT_HAVE_ALLOC_DEVICE_NET
	/* Devices live in the initial namespace, as rxe's and siw's do. */
	return _ib_alloc_device(size, &init_net);
#else
	return _ib_alloc_device(size);
#endif
}

struct ib_umem *rsoft_umem_get(struct ib_device *dev, unsigned long addr,
			       size_t len, int access)
{
#ifdef RSOFT_HAVE_UMEM_GET_VA
	return ib_umem_get_va(dev, addr, len, access);
#else
	return ib_umem_get(dev, addr, len, access);
#endif
}

bool rsoft_spin_trylock_irqsave(spinlock_t *lock, unsigned long *flags)
{
	return spin_trylock_irqsave(lock, *flags);
}

void rsoft_spin_assert_held(spinlock_t *lock)
{
	lockdep_assert_held(lock);
}

unsigned long rsoft_spin_lock_irqsave(spinlock_t *lock)
{
	unsigned long flags;

	spin_lock_irqsave(lock, flags);
	return flags;
}

void rsoft_spin_unlock_irqrestore(spinlock_t *lock, unsigned long flags)
{
	spin_unlock_irqrestore(lock, flags);
}

size_t rsoft_umem_pages(struct ib_umem *umem, struct page **pages, size_t n)
{
	struct sg_page_iter iter;
	size_t i = 0;

	for_each_sgtable_page(&umem->sgt_append.sgt, &iter, 0) {
		if (i == n)
			break;
		pages[i++] = sg_page_iter_page(&iter);
	}
	return i;
}

void rsoft_copy_page(struct page *dst, size_t dst_off, struct page *src,
		     size_t src_off, size_t len)
{
	void *d = kmap_local_page(dst);
	void *s = kmap_local_page(src);

	memcpy(d + dst_off, s + src_off, len);
	kunmap_local(s);
	kunmap_local(d);
}

void rsoft_page_write(struct page *dst, size_t off, const void *src, size_t len)
{
	void *d = kmap_local_page(dst);

	memcpy(d + off, src, len);
	kunmap_local(d);
}

void rsoft_page_read(void *dst, struct page *src, size_t off, size_t len)
{
	void *s = kmap_local_page(src);

	memcpy(dst, s + off, len);
	kunmap_local(s);
}

void rsoft_cond_resched(void)
{
	cond_resched();
}

u32 rsoft_crc32_le(u32 crc, const u8 *p, size_t len)
{
	return crc32_le(crc, p, len);
}

void rsoft_timer_setup(struct timer_list *timer,
		       void (*fn)(struct timer_list *timer))
{
	timer_setup(timer, fn, 0);
}

/* (Re)arms @timer to fire in @us microseconds; true if it was pending. */
bool rsoft_timer_arm(struct timer_list *timer, u64 us)
{
	return mod_timer(timer, jiffies + nsecs_to_jiffies(us * NSEC_PER_USEC));
}

/* Disarms @timer and waits for its callback; true if it was pending. */
bool rsoft_timer_cancel(struct timer_list *timer)
{
	return timer_delete_sync(timer);
}

/* The caller serialises rsoft's atomics; user stores may race, as on HW. */
struct page *rsoft_virt_to_page(unsigned long addr)
{
	return virt_addr_valid(addr) ? virt_to_page(addr) : NULL;
}

u64 rsoft_page_atomic(struct page *page, size_t off, bool cmp_swap, u64 operand,
		      u64 swap)
{
	u64 *p = kmap_local_page(page) + off;
	u64 old = READ_ONCE(*p);

	if (!cmp_swap)
		WRITE_ONCE(*p, old + operand);
	else if (old == operand)
		WRITE_ONCE(*p, swap);
	kunmap_local(p);
	return old;
}

struct nlattr *rsoft_nl_driver_start(struct sk_buff *msg)
{
	return nla_nest_start_noflag(msg, RDMA_NLDEV_ATTR_DRIVER);
}

void rsoft_nl_driver_end(struct sk_buff *msg, struct nlattr *nest)
{
	nla_nest_end(msg, nest);
}

void rsoft_nl_driver_cancel(struct sk_buff *msg, struct nlattr *nest)
{
	nla_nest_cancel(msg, nest);
}

bool rsoft_netdev_up(const struct net_device *ndev)
{
	return netif_running(ndev) && netif_carrier_ok(ndev);
}

unsigned int rsoft_netdev_mtu(const struct net_device *ndev)
{
	return READ_ONCE(ndev->mtu);
}

unsigned long rsoft_netdev_net(const struct net_device *ndev)
{
	return (unsigned long)dev_net(ndev);
}

void rsoft_netdev_hold(struct net_device *ndev)
{
	dev_hold(ndev);
}

void rsoft_netdev_put(struct net_device *ndev)
{
	dev_put(ndev);
}

u64 rsoft_netdev_eui64(const struct net_device *ndev)
{
	u8 eui[8] = {};

	if (ndev->addr_len == ETH_ALEN)
		addrconf_addr_eui48(eui, ndev->dev_addr);
	return get_unaligned_be64(eui);
}

struct net_device *rsoft_netdev_of(void *info)
{
	return netdev_notifier_info_to_dev(info);
}

int rsoft_netdev_notifier_register(struct notifier_block *nb)
{
	return register_netdevice_notifier(nb);
}

void rsoft_netdev_notifier_unregister(struct notifier_block *nb)
{
	unregister_netdevice_notifier(nb);
}

void rsoft_ib_device_hold(struct ib_device *ibdev)
{
	get_device(&ibdev->dev);
}

void rsoft_ib_device_unhold(struct ib_device *ibdev)
{
	put_device(&ibdev->dev);
}

void *rsoft_percpu_alloc(unsigned int n)
{
	return (void __force *)__alloc_percpu(n * sizeof(u64), sizeof(u64));
}

void rsoft_percpu_free(void *set)
{
	free_percpu((void __percpu __force *)set);
}

void rsoft_percpu_add(void *set, unsigned int n, unsigned int i, u64 v)
{
	u64 __percpu *c = (u64 __percpu __force *)set;

	if (i < n)
		this_cpu_add(c[i], v);
}

u64 rsoft_percpu_sum(void *set, unsigned int n, unsigned int i)
{
	u64 __percpu *c = (u64 __percpu __force *)set;
	u64 sum = 0;
	int cpu;

	if (i >= n)
		return 0;
	for_each_possible_cpu(cpu)
		sum += per_cpu(c[i], cpu);
	return sum;
}

/* An skb routed along @dst with @len bytes at *@data from the @hdr-byte
 * network header on; takes the reference to @dst.
 */
static struct sk_buff *rsoft_routed_skb(struct dst_entry *dst, __be16 proto,
					unsigned int hdr, unsigned int len,
					u8 **data)
{
	struct sk_buff *skb;

	skb = alloc_skb(LL_RESERVED_SPACE(dst->dev) + len, GFP_ATOMIC);
	if (!skb) {
		dst_release(dst);
		return NULL;
	}
	skb_reserve(skb, LL_RESERVED_SPACE(dst->dev));
	*data = skb_put(skb, len);
	skb_reset_network_header(skb);
	skb_set_transport_header(skb, hdr);
	skb->protocol = proto;
	skb->dev = dst->dev;
	skb_dst_set(skb, dst);
	return skb;
}

struct sk_buff *rsoft_ip4_skb(struct net_device *ndev, __be32 saddr,
			      __be32 daddr, unsigned int len, u8 **data)
{
	struct flowi4 fl = {
		.flowi4_oif = ndev->ifindex,
		.flowi4_proto = IPPROTO_UDP,
		.saddr = saddr,
		.daddr = daddr,
	};
	struct rtable *rt;

	rt = ip_route_output_key(dev_net(ndev), &fl);
	if (IS_ERR(rt))
		return NULL;
	return rsoft_routed_skb(&rt->dst, htons(ETH_P_IP), sizeof(struct iphdr),
				len, data);
}

struct sk_buff *rsoft_ip6_skb(struct net_device *ndev, const u8 *saddr,
			      const u8 *daddr, unsigned int len, u8 **data)
{
	struct flowi6 fl = {
		.flowi6_oif = ndev->ifindex,
		.flowi6_proto = IPPROTO_UDP,
	};
	struct dst_entry *dst;

	memcpy(&fl.saddr, saddr, sizeof(fl.saddr));
	memcpy(&fl.daddr, daddr, sizeof(fl.daddr));
	dst = ip6_dst_lookup_flow(dev_net(ndev), NULL, &fl, NULL);
	if (IS_ERR(dst))
		return NULL;
	return rsoft_routed_skb(dst, htons(ETH_P_IPV6), sizeof(struct ipv6hdr),
				len, data);
}

int rsoft_route_home(struct net_device *ndev, const u8 *src, const u8 *dst)
{
	struct flowi6 fl6 = {
		.flowi6_oif = ndev->ifindex,
		.flowi6_proto = IPPROTO_UDP,
	};
	struct dst_entry *d;
	bool home;

	if (ipv6_addr_v4mapped((const void *)src) &&
	    ipv6_addr_v4mapped((const void *)dst)) {
		struct flowi4 fl = {
			.flowi4_oif = ndev->ifindex,
			.flowi4_proto = IPPROTO_UDP,
			.saddr = get_unaligned((const __be32 *)(src + 12)),
			.daddr = get_unaligned((const __be32 *)(dst + 12)),
		};
		struct rtable *rt = ip_route_output_key(dev_net(ndev), &fl);

		if (IS_ERR(rt))
			return PTR_ERR(rt);
		home = rt->rt_flags & RTCF_LOCAL;
		ip_rt_put(rt);
		return home;
	}
	/* The IPv6 lookup may enable bottom halves (a MAD's post). */
	if (irqs_disabled())
		return -EAGAIN;
	memcpy(&fl6.saddr, src, sizeof(fl6.saddr));
	memcpy(&fl6.daddr, dst, sizeof(fl6.daddr));
	d = ip6_dst_lookup_flow(dev_net(ndev), NULL, &fl6, NULL);
	if (IS_ERR(d))
		return PTR_ERR(d);
	home = !dst_xfrm(d) && (dst_rt6_info(d)->rt6i_flags & RTF_LOCAL);
	dst_release(d);
	return home;
}

static int rsoft_ip4_xmit(struct sk_buff *skb)
{
	struct net *net = dev_net(skb->dev);
	/* net_xmit_eval() evaluates its argument twice. */
	int err = skb->protocol == htons(ETH_P_IPV6) ?
		  ip6_local_out(net, NULL, skb) : ip_local_out(net, NULL, skb);

	err = net_xmit_eval(err);
	/* NET_XMIT_DROP and the like are positive. */
	return err > 0 ? -ENOBUFS : err;
}

/*
 * The IP output enables bottom halves, which must not happen with interrupts
 * off, and the MAD layer posts under an irqsave lock: packets sent then wait
 * here for a work item, and so do those sent after them, to keep the order.
 */
static LLIST_HEAD(rsoft_ip4_later);

static void rsoft_ip4_send_later(struct work_struct *work)
{
	struct llist_node *list = llist_del_all(&rsoft_ip4_later);
	struct sk_buff *skb, *next;

	llist_for_each_entry_safe(skb, next, llist_reverse_order(list), ll_node) {
		skb_mark_not_on_list(skb);
		rsoft_ip4_xmit(skb);
	}
}

static DECLARE_WORK(rsoft_ip4_work, rsoft_ip4_send_later);

int rsoft_ip4_send(struct sk_buff *skb)
{
	if (irqs_disabled() || !llist_empty(&rsoft_ip4_later)) {
		if (llist_add(&skb->ll_node, &rsoft_ip4_later))
			schedule_work(&rsoft_ip4_work);
		return 0;
	}
	return rsoft_ip4_xmit(skb);
}

unsigned int rsoft_netdev_train_max(const struct net_device *ndev)
{
	/* ethtool's tx-udp-segmentation and ip link's gso_max_segs say no. */
	if (!(READ_ONCE(ndev->features) & NETIF_F_GSO_UDP_L4))
		return 1;
	return READ_ONCE(ndev->gso_max_segs);
}

void rsoft_udp_train(struct sk_buff *skb, unsigned int seg)
{
	struct udphdr *uh = udp_hdr(skb);
	unsigned int len = skb_tail_pointer(skb) - skb_transport_header(skb);

	/* One packet, or none whole: nothing to cut. */
	if (!seg || len <= sizeof(*uh) + seg)
		return;
	skb_shinfo(skb)->gso_size = seg;
	skb_shinfo(skb)->gso_type = SKB_GSO_UDP_L4;
	skb_shinfo(skb)->gso_segs = DIV_ROUND_UP(len - sizeof(*uh), seg);
	/* UDP GSO wants the checksum offloaded: each packet gets its own. */
	skb->ip_summed = CHECKSUM_PARTIAL;
	skb->csum_start = skb_transport_header(skb) - skb->head;
	skb->csum_offset = offsetof(struct udphdr, check);
	if (skb->protocol == htons(ETH_P_IP))
		uh->check = ~udp_v4_check(len, ip_hdr(skb)->saddr,
					  ip_hdr(skb)->daddr, 0);
	else
		uh->check = ~udp_v6_check(len, &ipv6_hdr(skb)->saddr,
					  &ipv6_hdr(skb)->daddr, 0);
}

void rsoft_ip4_flush(void)
{
	flush_work(&rsoft_ip4_work);
	/* A packet queued after the last run is sent now. */
	rsoft_ip4_send_later(NULL);
}

void rsoft_skb_free(struct sk_buff *skb)
{
	kfree_skb(skb);
}

/*
 * One UDP socket on port 4791 per network namespace, shared by the rsoft
 * links there, opened with the first and released with the last (or when
 * the namespace goes). The udp_tunnel module's helpers would make rsoft.ko
 * depend on a module: the few lines they run are here.
 */
struct rsoft_udp_net {
	struct socket *sock;
	struct socket *sock6;
	unsigned int users;
};

static DEFINE_MUTEX(rsoft_udp_lock);	/* every rsoft_udp_net, and the next two */
static bool rsoft_udp_up;
static rsoft_udp_handler_t rsoft_udp_handler;
static void *rsoft_udp_ctx;
static unsigned int rsoft_udp_net_id;

/* Hands the first @len bytes of @skb's packet, from its IP header on, over. */
static void rsoft_udp_hand(struct sk_buff *skb, unsigned int len)
{
	rsoft_udp_handler_t handler = READ_ONCE(rsoft_udp_handler);

	if (handler && !skb_linearize(skb))
		handler(READ_ONCE(rsoft_udp_ctx), skb->dev, skb_network_header(skb),
			len);
}

static bool rsoft_tapped(const struct net_device *ndev);

static int rsoft_udp_encap_rcv(struct sock *sk, struct sk_buff *skb)
{
	/* A tapped link took it already (see rsoft_tap_open()). */
	if (!rsoft_tapped(skb->dev))
		rsoft_udp_hand(skb, skb->len - skb_network_offset(skb));
	consume_skb(skb);
	return 0;
}

static void rsoft_udp_sock_release(struct socket **sockp)
{
	if (!*sockp)
		return;
	kernel_sock_shutdown(*sockp, SHUT_RDWR);
	sock_release(*sockp);
	*sockp = NULL;
}

static void rsoft_udp_release(struct rsoft_udp_net *un)
{
	rsoft_udp_sock_release(&un->sock);
	rsoft_udp_sock_release(&un->sock6);
	un->users = 0;
}

static void rsoft_udp_net_exit(struct net *net)
{
	mutex_lock(&rsoft_udp_lock);
	rsoft_udp_release(net_generic(net, rsoft_udp_net_id));
	mutex_unlock(&rsoft_udp_lock);
}

static struct pernet_operations rsoft_udp_net_ops = {
	.exit = rsoft_udp_net_exit,
	.id = &rsoft_udp_net_id,
	.size = sizeof(struct rsoft_udp_net),
};

int rsoft_udp_register(rsoft_udp_handler_t handler, void *ctx)
{
	int err = register_pernet_subsys(&rsoft_udp_net_ops);

	if (err)
		return err;
	mutex_lock(&rsoft_udp_lock);
	WRITE_ONCE(rsoft_udp_ctx, ctx);
	WRITE_ONCE(rsoft_udp_handler, handler);
	rsoft_udp_up = true;
	mutex_unlock(&rsoft_udp_lock);
	return 0;
}

void rsoft_udp_unregister(void)
{
	mutex_lock(&rsoft_udp_lock);
	rsoft_udp_up = false;
	WRITE_ONCE(rsoft_udp_handler, NULL);
	mutex_unlock(&rsoft_udp_lock);
	unregister_pernet_subsys(&rsoft_udp_net_ops);
	/* A receive that found a socket before its release may still run. */
	synchronize_rcu();
}

static int rsoft_udp_create(struct net *net, int family, struct socket **sockp)
{
	struct sockaddr_in6 addr6 = {
		.sin6_family = AF_INET6,
		.sin6_addr = IN6ADDR_ANY_INIT,
		.sin6_port = htons(ROCE_V2_UDP_DPORT),
	};
	struct sockaddr_in addr = {
		.sin_family = AF_INET,
		.sin_addr.s_addr = htonl(INADDR_ANY),
		.sin_port = htons(ROCE_V2_UDP_DPORT),
	};
	struct socket *sock;
	struct sock *sk;
	int err;

	err = sock_create_kern(net, family, SOCK_DGRAM, 0, &sock);
	if (err)
		return err;
	sk = sock->sk;
	if (family == AF_INET6) {
		/* IPv4 has its own socket; senders send no UDP checksum. */
		err = ip6_sock_set_v6only(sk);
		udp_set_no_check6_rx(sk, true);
	}
	/* The address type differs between kernels. */
	if (!err && family == AF_INET6)
		err = kernel_bind(sock, (void *)&addr6, sizeof(addr6));
	else if (!err)
		err = kernel_bind(sock, (void *)&addr, sizeof(addr));
	if (err) {
		sock_release(sock);
		return err;
	}
	/*
	 * No convert_csum, unlike tunnels: rsoft needs no checksum of the
	 * payload, and without it the stack cuts trains apart without
	 * summing each packet.
	 */
	inet_clear_bit(MC_LOOP, sk);
	udp_sk(sk)->encap_type = 1;
	udp_sk(sk)->encap_rcv = rsoft_udp_encap_rcv;
	udp_tunnel_encap_enable(sk);
	*sockp = sock;
	return 0;
}

int rsoft_udp_open(struct net_device *ndev)
{
	struct rsoft_udp_net *un;
	int err = 0;

	mutex_lock(&rsoft_udp_lock);
	if (!rsoft_udp_up) {
		err = -ENODEV;
		goto out;
	}
	un = net_generic(dev_net(ndev), rsoft_udp_net_id);
	if (!un->sock) {
		err = rsoft_udp_create(dev_net(ndev), AF_INET, &un->sock);
		if (!err)
			err = rsoft_udp_create(dev_net(ndev), AF_INET6, &un->sock6);
		if (err)
			rsoft_udp_release(un);
	}
	if (!err)
		un->users++;
out:
	mutex_unlock(&rsoft_udp_lock);
	return err;
}

void rsoft_udp_close(struct net_device *ndev)
{
	struct rsoft_udp_net *un;

	mutex_lock(&rsoft_udp_lock);
	if (rsoft_udp_up) {
		un = net_generic(dev_net(ndev), rsoft_udp_net_id);
		if (un->users && !--un->users)
			rsoft_udp_release(un);
	}
	mutex_unlock(&rsoft_udp_lock);
}

/*
 * Where another listener has port 4791 of the namespace (6.12's rxe, in
 * init_net), a link takes the RoCEv2 packets that reach its own netdev off
 * it, as a RoCE NIC takes them off its port: a packet handler of that
 * netdev for IPv4 and one for IPv6, which the core calls after the IP
 * stack's. The stack gets each packet all the same, and the other
 * listener drops those that came in on no netdev of its own, as rxe does.
 */
struct rsoft_tap {
	struct packet_type pt[2];
	struct list_head node;	/* in rsoft_taps */
};

/*
 * Every tap, RCU-read by the sockets' receive: a namespace's socket, opened
 * after a tap there (by a link made once the other listener had gone),
 * leaves that netdev's packets to its tap, so that each is taken once.
 * Written under rsoft_udp_lock.
 */
static LIST_HEAD(rsoft_taps);

static bool rsoft_tapped(const struct net_device *ndev)
{
	struct rsoft_tap *tap;

	list_for_each_entry_rcu(tap, &rsoft_taps, node)
		if (tap->pt[0].dev == ndev)
			return true;
	return false;
}

/*
 * The length of @skb's packet if it is IPv4 (without options, no fragment)
 * or IPv6 (no extension header) to UDP port 4791, whole; else 0.
 */
static unsigned int rsoft_tap_roce_len(struct sk_buff *skb)
{
	const struct ipv6hdr *ip6h;
	const struct iphdr *iph;
	const struct udphdr *uh;
	union {
		struct iphdr v4;
		struct ipv6hdr v6;
	} _ip;
	int at = skb_network_offset(skb);
	struct udphdr _uh;
	unsigned int hlen, len;

	if (skb->protocol == htons(ETH_P_IP)) {
		iph = skb_header_pointer(skb, at, sizeof(*iph), &_ip.v4);
		if (!iph || iph->version != 4 || iph->ihl != 5 ||
		    iph->protocol != IPPROTO_UDP || ip_is_fragment(iph) ||
		    ip_fast_csum(iph, iph->ihl))
			return 0;
		hlen = sizeof(*iph);
		len = ntohs(iph->tot_len);
	} else {
		ip6h = skb_header_pointer(skb, at, sizeof(*ip6h), &_ip.v6);
		if (!ip6h || ip6h->version != 6 || ip6h->nexthdr != IPPROTO_UDP)
			return 0;
		hlen = sizeof(*ip6h);
		len = hlen + ntohs(ip6h->payload_len);
	}
	if (len > skb->len - at || len < hlen + sizeof(*uh))
		return 0;
	uh = skb_header_pointer(skb, at + hlen, sizeof(*uh), &_uh);
	if (!uh || uh->dest != htons(ROCE_V2_UDP_DPORT) ||
	    ntohs(uh->len) != len - hlen)
		return 0;
	return len;
}

static int rsoft_tap_rcv(struct sk_buff *skb, struct net_device *ndev,
			 struct packet_type *pt, struct net_device *orig_dev)
{
	struct sk_buff *segs, *seg, *next;
	unsigned int len;

	if (skb->pkt_type != PACKET_HOST)
		goto out;
	skb = skb_share_check(skb, GFP_ATOMIC);
	if (!skb)
		return NET_RX_DROP;
	if (!skb_is_gso(skb)) {
		len = rsoft_tap_roce_len(skb);
		if (len)
			rsoft_udp_hand(skb, len);
		goto out;
	}
	/* A train of another rsoft's (UDP GSO): its packets, one by one. */
	if (!rsoft_tap_roce_len(skb))
		goto out;
	segs = __skb_gso_segment(skb, NETIF_F_SG | NETIF_F_IP_CSUM |
				 NETIF_F_IPV6_CSUM, false);
	if (IS_ERR_OR_NULL(segs))
		goto out;
	skb_list_walk_safe(segs, seg, next) {
		len = rsoft_tap_roce_len(seg);
		if (len)
			rsoft_udp_hand(seg, len);
		consume_skb(seg);
	}
out:
	consume_skb(skb);
	return NET_RX_SUCCESS;
}

struct rsoft_tap *rsoft_tap_open(struct net_device *ndev)
{
	static const __be16 types[] = { htons(ETH_P_IP), htons(ETH_P_IPV6) };
	struct rsoft_tap *tap;
	unsigned int i;

	tap = kzalloc(sizeof(*tap), GFP_KERNEL);
	if (!tap)
		return ERR_PTR(-ENOMEM);
	for (i = 0; i < ARRAY_SIZE(tap->pt); i++) {
		tap->pt[i].type = types[i];
		tap->pt[i].dev = ndev;
		tap->pt[i].func = rsoft_tap_rcv;
	}
	/* Listed first: no packet is taken twice, by a socket and the tap. */
	mutex_lock(&rsoft_udp_lock);
	list_add_rcu(&tap->node, &rsoft_taps);
	mutex_unlock(&rsoft_udp_lock);
	for (i = 0; i < ARRAY_SIZE(tap->pt); i++)
		dev_add_pack(&tap->pt[i]);
	return tap;
}

void rsoft_tap_close(struct rsoft_tap *tap)
{
	unsigned int i;

	/* Unhooked first: no packet is taken twice, by the tap and a socket. */
	for (i = 0; i < ARRAY_SIZE(tap->pt); i++)
		__dev_remove_pack(&tap->pt[i]);
	mutex_lock(&rsoft_udp_lock);
	list_del_rcu(&tap->node);
	mutex_unlock(&rsoft_udp_lock);
	/* No handler runs now, and no socket's receive sees the tap listed. */
	synchronize_net();
	kfree(tap);
}
